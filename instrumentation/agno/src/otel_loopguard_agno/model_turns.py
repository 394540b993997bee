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

from collections.abc import Callable
from typing import Any

from otel_loopguard.kit.model_turn import ModelCall, model_turn_wrapper
from otel_loopguard.kit.streamed_turns import model_turn_stream
from otel_loopguard.kit.tool_gate import json_arguments
from otel_loopguard_agno.runs import raise_held


def _read_answer(call: ModelCall) -> dict[str, Any]:
    """The answer of ``_process_model_response(messages, assistant_message, ...)`` (or its
    coroutine ``_aprocess_model_response``): the ``assistant_message`` Agno filled in."""
    return _message_report(call.instance, _assistant_message(call.args, call.kwargs))


#: ``Model._process_model_response(messages, assistant_message, ...)``
process_wrapper = model_turn_wrapper(_read_answer, package="agno", asynchronous=False)
#: ``Model._aprocess_model_response(...)``: first, a member stopped in a task (see .runs)
#: stops the run before the next call
aprocess_wrapper = model_turn_wrapper(
    _read_answer, package="agno", first=raise_held, asynchronous=True
)


def stream_wrapper(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Wrap ``Model.process_response_stream(messages, assistant_message, ...)`` or
    ``aprocess_response_stream``: the generator of chunks is one model turn
    (:func:`~otel_loopguard.kit.streamed_turns.model_turn_stream`), reported from the
    ``assistant_message`` once the stream is done; an async stream first raises an interrupt
    held back in the run (see .runs)."""
    chunks = wrapped(*args, **kwargs)
    message = _assistant_message(args, kwargs)
    return model_turn_stream(
        chunks,
        lambda: _message_report(instance, message),
        package="agno",
        first=raise_held if hasattr(chunks, "__anext__") else None,
    )


def _assistant_message(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return args[1] if len(args) > 1 else kwargs.get("assistant_message")


def _message_report(model: Any, message: Any) -> dict[str, Any]:
    """The ``observe_llm_response`` arguments of one complete assistant message."""
    requested = [
        (call["function"]["name"], _arguments(call["function"].get("arguments")))
        for call in getattr(message, "tool_calls", None) or ()
    ]
    content = getattr(message, "content", None)
    said = isinstance(content, str) and bool(content.strip())
    said = said or (content is not None and not isinstance(content, str))  # structured
    metrics = getattr(message, "metrics", None)
    model_id = getattr(model, "id", None)
    return {
        "model": model_id if isinstance(model_id, str) and model_id else None,
        "input_tokens": _tokens(getattr(metrics, "input_tokens", None)),
        "output_tokens": _tokens(getattr(metrics, "output_tokens", None)),
        "empty": not said and not requested,
        "requested_tool_calls": requested,
    }


def _arguments(raw: Any) -> Any:
    """A call's arguments as the tool gets them (Agno parses the JSON the same way: blank
    text is no arguments)."""
    return json_arguments(raw, blank=dict)


def _tokens(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
