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

Delivering recommendations (``enforce`` mode): a replan's recommendation waiting for the
run goes into the next model call, after the pre-flight check, as a ``Message(role="user",
content=..., temporary=True)`` at the end of a copy of the ``messages`` list that call
gets (after the tool messages answering the last tool calls). Agno's tool loop appends the
assistant message and the tool results to its own list after each call; the copy is
passed to this one call only, so the next request (built from the loop's list) does not
repeat the message and the run's stored messages never hold it. Agno's own retry with
guidance, should it happen in that very call, appends its temporary message to the copy.

An empty answer after failing tools (Agno's loop ends the run on an answer without tool
calls) is asked again at once, in the calls answered at once (``_process_model_response``
and its coroutine): the same request, the re-prompt delivered; the second answer fills the
loop's ``assistant_message`` in place of the empty one. A streamed call is not asked again
(its chunks are already with the caller); a truncation is not either: Agno keeps no finish
reason, so it is only seen when a layer below reports the turn.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Callable, Generator
from contextlib import aclosing
from typing import Any

from otel_loopguard import get_guard
from otel_loopguard.kit.model_turn import ModelCall, model_turn_wrapper
from otel_loopguard.kit.recommendations import can_deliver, deliver_waiting
from otel_loopguard.kit.scoped_call import Wrapper
from otel_loopguard.kit.streamed_turns import model_turn_stream
from otel_loopguard.kit.tool_gate import json_arguments
from otel_loopguard_agno.runs import raise_held


def _read_answer(call: ModelCall) -> dict[str, Any]:
    """The answer of ``_process_model_response(messages, assistant_message, ...)`` (or its
    coroutine ``_aprocess_model_response``): the ``assistant_message`` Agno filled in."""
    return _message_report(call.instance, _assistant_message(call.args, call.kwargs))


PACKAGE = "agno"


def make_process_wrapper(instrumentor: Any = None) -> Wrapper:
    """The wrapper of ``Model._process_model_response(messages, assistant_message, ...)``."""
    return model_turn_wrapper(
        _read_answer,
        package=PACKAGE,
        asynchronous=False,
        deliver=deliver_message,
        again=_again,
    )


def make_aprocess_wrapper(instrumentor: Any = None) -> Wrapper:
    """The wrapper of ``Model._aprocess_model_response(...)``: first, a member stopped in a
    task (see .runs) stops the run before the next call."""
    return model_turn_wrapper(
        _read_answer,
        package=PACKAGE,
        first=raise_held,
        asynchronous=True,
        deliver=deliver_message,
        again=_again,
    )


def make_stream_wrapper(instrumentor: Any = None) -> Wrapper:
    """The wrapper of ``process_response_stream`` / ``aprocess_response_stream``."""
    can_deliver(PACKAGE)
    return stream_wrapper


def stream_wrapper(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Wrap ``Model.process_response_stream(messages, assistant_message, ...)`` or
    ``aprocess_response_stream``: the generator of chunks is one model turn
    (:func:`~otel_loopguard.kit.streamed_turns.model_turn_stream`), reported from the
    ``assistant_message`` once the stream is done; an async stream first raises an interrupt
    held back in the run (see .runs). The provider's stream is made at the first chunk asked
    for, after the pre-flight check, with the waiting recommendation delivered."""
    message = _assistant_message(args, kwargs)
    call = ModelCall(instance, args, kwargs)
    asynchronous = inspect.isasyncgenfunction(wrapped)
    chunks = _adelivered(wrapped, call) if asynchronous else _delivered(wrapped, call)
    return model_turn_stream(
        chunks,
        lambda: _message_report(instance, message),
        package=PACKAGE,
        first=raise_held if asynchronous else None,
    )


def _delivered(wrapped: Callable[..., Any], call: ModelCall) -> Generator[Any, None, None]:
    _deliver(call)
    yield from wrapped(*call.args, **call.kwargs)


async def _adelivered(wrapped: Callable[..., Any], call: ModelCall) -> AsyncGenerator[Any, None]:
    _deliver(call)
    async with aclosing(wrapped(*call.args, **call.kwargs)) as chunks:
        async for chunk in chunks:
            yield chunk


def _deliver(call: ModelCall) -> None:
    """The run's waiting recommendation into a streamed call's request (never raises)."""
    deliver_waiting(get_guard(), call, deliver_message, PACKAGE)


def deliver_message(call: ModelCall, message: str) -> bool:
    """Add ``message`` as a temporary user ``Message`` at the end of a copy of the call's
    ``messages`` (after the tool messages that answer the last tool calls)."""
    from agno.models.message import Message

    if "messages" in call.kwargs:
        messages = call.kwargs["messages"]
    elif call.args:
        messages = call.args[0]
    else:
        return False
    if not isinstance(messages, list):
        return False
    copied = [*messages, Message(role="user", content=message, temporary=True)]
    if "messages" in call.kwargs:
        call.kwargs = {**call.kwargs, "messages": copied}
    else:
        call.args = (copied, *call.args[1:])
    return True


def _again(call: ModelCall, detector: str) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """The re-ask after an empty give-up: the same request (the re-prompt is delivered into
    a copy of it); the second answer fills the same ``assistant_message``. None for a
    truncation: its text is already in the loop's answer (see the module docstring)."""
    if detector != "premature_end":
        return None
    return call.args, dict(call.kwargs)


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
