"""The model side of each Agno step, for budgets, max steps and empty answers.

Why these hook points (agno 3.1): every model class (OpenAIChat, Claude, Gemini, a user's
own) implements the provider calls ``invoke`` / ``ainvoke`` / ``invoke_stream`` /
``ainvoke_stream`` itself, so wrapping the base class would see none of them. Their one
caller is the base ``Model``'s tool loop (``response``, ``aresponse``, ``response_stream``,
``aresponse_stream``), which makes each model call through one of four methods no model
overrides: ``_process_model_response`` / ``_aprocess_model_response`` (a call answered at
once) and ``process_response_stream`` / ``aprocess_response_stream`` (generators of the
streamed chunks). Each is given the turn's ``assistant_message``, which Agno fills in when
the call is complete: its tool calls (OpenAI-shaped, arguments as JSON), its text and its
``metrics`` (the provider's usage: input and output tokens). The loop runs the requested
tools only after that, so a STOP reported here (a token budget) interrupts the run before
they run.

- Before the call: the pre-flight check (a stopped run, ``max_steps``, the run's timeout, no
  token headroom), so in ``enforce`` mode a vetoed call is never made nor paid for.
- A :meth:`~otel_loopguard.LoopGuard.model_turn` around the call (around each
  pull of a stream, never open while the caller holds a chunk), and one ``llm_response``
  when the call is complete, unless a layer below reported the turn: our OpenAI package,
  OpenInference's Agno instrumentation (whose model spans the span processor reads under
  ``opentelemetry-instrument``).

Agno keeps no finish reason (its ``ModelResponse`` has none): none is reported.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable, Generator
from typing import Any

from otel_loopguard import get_guard
from otel_loopguard_agno.runs import raise_held


def process_wrapper(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Wrap ``Model._process_model_response(messages, assistant_message, ...)``."""
    guard = get_guard()
    guard.preflight_llm()
    with guard.model_turn() as turn:
        result = wrapped(*args, **kwargs)
    if turn.needs_report:
        _observe_message(guard, instance, _assistant_message(args, kwargs))
    return result


async def aprocess_wrapper(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Wrap ``Model._aprocess_model_response(messages, assistant_message, ...)``."""
    raise_held()  # a member stopped in a task (see .runs): stop before the next call
    guard = get_guard()
    guard.preflight_llm()
    with guard.model_turn() as turn:
        result = await wrapped(*args, **kwargs)
    if turn.needs_report:
        _observe_message(guard, instance, _assistant_message(args, kwargs))
    return result


def stream_wrapper(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Wrap ``Model.process_response_stream(messages, assistant_message, ...)``."""
    return _observed_stream(wrapped(*args, **kwargs), instance, _assistant_message(args, kwargs))


def astream_wrapper(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Wrap ``Model.aprocess_response_stream(messages, assistant_message, ...)``."""
    return _aobserved_stream(wrapped(*args, **kwargs), instance, _assistant_message(args, kwargs))


def _observed_stream(
    chunks: Generator[Any, None, None], model: Any, assistant_message: Any
) -> Generator[Any, None, None]:
    guard = get_guard()
    try:
        guard.preflight_llm()
        in_run = False
        reported = False  # by a layer below, during any pull
        while True:
            with guard.model_turn() as turn:
                try:
                    chunk = next(chunks)
                except StopIteration:
                    chunk = _DONE
            in_run = in_run or turn.in_run
            reported = reported or turn.reported
            if chunk is _DONE:
                break
            yield chunk
        if in_run and not reported:
            _observe_message(guard, model, assistant_message)
    finally:
        chunks.close()


async def _aobserved_stream(
    chunks: AsyncGenerator[Any, None], model: Any, assistant_message: Any
) -> AsyncGenerator[Any, None]:
    guard = get_guard()
    try:
        raise_held()
        guard.preflight_llm()
        in_run = False
        reported = False
        while True:
            with guard.model_turn() as turn:
                try:
                    chunk = await chunks.__anext__()
                except StopAsyncIteration:
                    chunk = _DONE
            in_run = in_run or turn.in_run
            reported = reported or turn.reported
            if chunk is _DONE:
                break
            yield chunk
        if in_run and not reported:
            _observe_message(guard, model, assistant_message)
    finally:
        await chunks.aclose()


_DONE = object()


def _assistant_message(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return args[1] if len(args) > 1 else kwargs.get("assistant_message")


def _observe_message(guard: Any, model: Any, message: Any) -> None:
    """Report one complete assistant message; raises only our interrupt."""
    try:
        requested = [
            (call["function"]["name"], _arguments(call["function"].get("arguments")))
            for call in getattr(message, "tool_calls", None) or ()
        ]
        content = getattr(message, "content", None)
        said = isinstance(content, str) and bool(content.strip())
        said = said or (content is not None and not isinstance(content, str))  # structured
        metrics = getattr(message, "metrics", None)
        model_id = getattr(model, "id", None)
        report: dict[str, Any] = {
            "model": model_id if isinstance(model_id, str) and model_id else None,
            "input_tokens": _tokens(getattr(metrics, "input_tokens", None)),
            "output_tokens": _tokens(getattr(metrics, "output_tokens", None)),
            "empty": not said and not requested,
            "requested_tool_calls": requested,
        }
    except Exception as exc:  # never let our bookkeeping break the agent
        guard.telemetry.internal_error("agno.model_turn", exc)
        return
    guard.observe_llm_response(**report)


def _arguments(raw: Any) -> Any:
    """A call's arguments as the tool gets them (Agno parses the JSON the same way)."""
    if isinstance(raw, str):
        try:
            return json.loads(raw) if raw.strip() else {}
        except ValueError:
            return raw
    return raw


def _tokens(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
