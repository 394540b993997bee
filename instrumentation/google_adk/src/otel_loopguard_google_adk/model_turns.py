"""The model side of each ADK step, for budgets, max steps and empty answers.

Why this hook point (google-adk 2.13): every ``BaseLlm`` (Gemini, LiteLLM, Anthropic, a
user's own) overrides ``generate_content_async``, so wrapping the base class would see none
of them. Each step of an ``LlmAgent``'s flow calls its model through one method,
``BaseLlmFlow._call_llm_async(invocation_context, llm_request, model_response_event)``, an
async generator of ``LlmResponse`` (streamed chunks marked ``partial``, then the complete
response). The flow runs the response's function calls as soon as it has it, before it asks
for the next one.

- Before the call: the pre-flight check (a stopped run, ``max_steps``, the run's timeout, no
  token headroom), so in ``enforce`` mode a vetoed call is never made nor paid for.
- One :meth:`~otel_loopguard.LoopGuard.model_turn` per pull of the generator
  (never open while the flow runs the tools between two pulls); at the first complete
  response, unless a layer below reported the turn, one ``llm_response`` with its usage
  (``usage_metadata``: prompt tokens in, candidate and thinking tokens out), finish reason
  and requested function calls. A STOP there (a token budget) interrupts the run before
  those calls run.

A trap: ADK drives the model's generator in copies of the context taken at the first pull
(``_stream_in_caller_scope``, ``stream_in_scope``), and its own ``generate_content`` span
ends in that copy, which holds the turn of the first pull only. So the first turn's mark
counts for the whole call. Under ``opentelemetry-instrument`` that span, read by the span
processor, is the layer below that reports; our report is for programs without it.

Delivering recommendations (``enforce`` mode): a replan's recommendation waiting for the
run goes into the request of the run's next model call, after the pre-flight check, as a
``types.Content(role="user", parts=[types.Part(text=...)])`` appended to the request's
``contents`` (after the function responses of the last step). The flow builds a new
``LlmRequest`` from the session's events every step, and the message goes into a shallow
copy of it with a new ``contents`` list, so neither the flow's request nor the session's
events change: the model sees the message once, in that one request.

ADK ends the agent's turn on a complete text answer, also when it was cut off at the token
limit (``MAX_TOKENS``), and on an empty answer (which it marks as an error). When the
answer's report queues a re-ask for the run (a truncation's continuation prompt, the
re-prompt after an empty give-up following failing tools), that answer is held back and the
model asked again at once with the same request plus the answer so far (a ``model``
content) and the delivered prompt; the flow then gets one answer: the truncated text joined
with its continuation (usage summed), or the re-prompted answer in place of the empty one.
Streamed (SSE) partial chunks of both calls pass through as they come.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import Any

from otel_loopguard import get_guard
from otel_loopguard.kit.model_turn import ModelCall, report_turn
from otel_loopguard.kit.recommendations import (
    REASK_DETECTORS,
    can_deliver,
    combined_answer,
    deliver_waiting,
    reask_request,
    reasks_allowed,
    waiting_detector,
)
from otel_loopguard.kit.run_streams import aclose_stream, async_items

PACKAGE = "google_adk"

#: (args, kwargs) of one ``_call_llm_async`` call
Request = tuple[tuple[Any, ...], dict[str, Any]]


def make_call_llm_wrapper(instrumentor: Any = None) -> Callable[..., Any]:
    """The wrapper of ``BaseLlmFlow._call_llm_async``; says that this package delivers
    recommendations (a replan is queued for the next model call, not recorded as
    undeliverable)."""
    can_deliver(PACKAGE)
    return call_llm_wrapper


def call_llm_wrapper(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Wrap ``BaseLlmFlow._call_llm_async(invocation_context, llm_request,
    model_response_event)``."""
    return _observed_call(wrapped, instance, args, kwargs)


async def _observed_call(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> AsyncGenerator[Any, None]:
    """The model call, re-asked while its complete answer queued a re-ask (module
    docstring); yields what the flow gets."""
    guard = get_guard()
    request: Request = (args, kwargs)
    so_far: Any = None  # the answer held back, joined with its continuations
    detector: str | None = None
    for _ in range(reasks_allowed(guard) + 1):
        held: Any = None
        async for response, reask in _one_call(guard, wrapped, ModelCall(instance, *request)):
            if held is not None:  # the call answered on after it: no re-ask of this call
                yield held
                held = None
            if reask:
                held = combined_answer(guard, PACKAGE, _join, so_far, response, detector)
                continue
            if so_far is not None and not _is_partial(response):
                response = combined_answer(guard, PACKAGE, _join, so_far, response, detector)
                so_far = None
            yield response
        if held is None:
            return
        detector = waiting_detector(guard, PACKAGE)
        follow_up = reask_request(
            guard, ModelCall(instance, args, kwargs, result=held), _again, PACKAGE
        )
        if follow_up is None:
            yield held
            return
        so_far, request = held, follow_up
    if so_far is not None:  # pragma: no cover - the detectors stop asking before
        yield so_far


async def _one_call(
    guard: Any, wrapped: Callable[..., Any], call: ModelCall
) -> AsyncGenerator[tuple[Any, bool], None]:
    """One call of the flow's model: pre-flight check, delivery, one turn per pull, the
    report of its first complete response; yields ``(response, reask)``, ``reask`` True
    for a complete response whose report queued a re-ask of this run."""
    guard.preflight_llm()
    deliver_waiting(guard, call, deliver_message, PACKAGE)
    args, kwargs = call.args, call.kwargs
    invocation_context = args[0] if args else kwargs.get("invocation_context")
    llm_request = args[1] if len(args) > 1 else kwargs.get("llm_request")
    responses = wrapped(*args, **kwargs)
    items = async_items(responses)  # another instrumentation's iterable proxy too
    try:
        first_turn = None
        reported = False
        while True:
            turn = guard.model_turn()  # never raises
            if first_turn is None:
                first_turn = turn
            try:
                response = await items.__anext__()
            except StopAsyncIteration:
                return
            finally:
                turn.end()
            reask = False
            if turn.in_run and _is_complete(guard, response):
                if not (reported or turn.reported or first_turn.reported):
                    reported = True
                    report_turn(  # raises only our interrupt
                        guard, PACKAGE, _response_report, response, invocation_context, llm_request
                    )
                reask = _reask_waiting(guard)
            yield response, reask
    finally:
        await aclose_stream(items, responses)


def _reask_waiting(guard: Any) -> bool:
    """Whether a re-ask (a truncation's continuation, a premature end's re-prompt) waits
    for the current run; the common case (nothing waiting anywhere) is one test."""
    if not guard.deliveries.any_waiting():
        return False
    return waiting_detector(guard, PACKAGE) in REASK_DETECTORS


def _live(call: ModelCall) -> bool:
    """A call ADK answers through a live connection (``RunConfig.support_cfc``), which
    never sends the request's contents: it cannot carry a message."""
    args = call.args
    context = args[0] if args else call.kwargs.get("invocation_context")
    return getattr(getattr(context, "run_config", None), "support_cfc", False) is True


def _llm_request(call: ModelCall) -> Any:
    args = call.args
    return args[1] if len(args) > 1 else call.kwargs.get("llm_request")


def _with_request(call: ModelCall, llm_request: Any) -> Request:
    """``call``'s arguments with ``llm_request`` in place of its request."""
    args, kwargs = call.args, dict(call.kwargs)
    if len(args) > 1:
        return (args[0], llm_request, *args[2:]), kwargs
    kwargs["llm_request"] = llm_request
    return args, kwargs


def _with_contents(llm_request: Any, *extra: Any) -> Any:
    """A shallow copy of ``llm_request`` whose ``contents`` is a new list ending with
    ``extra``: the flow's request and the session's contents stay as they were."""
    contents = llm_request.contents
    if not isinstance(contents, list):
        raise TypeError(f"LlmRequest.contents is {type(contents).__name__}, not a list")
    return llm_request.model_copy(update={"contents": [*contents, *extra]})


def deliver_message(call: ModelCall, message: str) -> bool:
    """Add ``message`` to the request as a user ``Content`` at the end of its contents
    (after the function responses the model asked for); the request object is copied."""
    from google.genai import types

    llm_request = _llm_request(call)
    if llm_request is None or _live(call):
        return False
    content = types.Content(role="user", parts=[types.Part(text=message)])
    call.args, call.kwargs = _with_request(call, _with_contents(llm_request, content))
    return True


def _again(call: ModelCall, detector: str) -> Request | None:
    """The re-ask after ``call.result``: the original request, plus the truncated answer
    as a ``model`` content (an empty answer adds nothing: Gemini rejects a content without
    parts); the waiting prompt is delivered into it by :func:`deliver_message`."""
    from google.genai import types

    llm_request = _llm_request(call)
    if llm_request is None:
        return None
    if detector != "truncation":
        return _with_request(call, _with_contents(llm_request))
    parts = [p for p in _parts(call.result) if getattr(p, "function_call", None) is None]
    if not _text(parts):
        return None  # nothing to continue from
    answer = types.Content(role="model", parts=parts)
    return _with_request(call, _with_contents(llm_request, answer))


def _join(first: Any, second: Any) -> Any:
    """One ``LlmResponse``: the text of both answers, the second's thoughts and function
    calls, the second's finish reason, usage summed."""
    from google.genai import types

    parts = _parts(second)
    text = _text(_parts(first)) + _text(parts)
    thoughts = [p for p in parts if getattr(p, "thought", False)]
    others = [p for p in parts if not getattr(p, "thought", False) and p.text is None]
    content = types.Content(role="model", parts=[*thoughts, types.Part(text=text), *others])
    return second.model_copy(
        update={
            "content": content,
            "usage_metadata": _usage_sum(first.usage_metadata, second.usage_metadata),
        }
    )


def _usage_sum(first: Any, second: Any) -> Any:
    if first is None or second is None:
        return second if second is not None else first
    fields = ("prompt_token_count", "candidates_token_count", "thoughts_token_count")
    totals: dict[str, int] = {}
    for field in (*fields, "total_token_count"):
        a, b = getattr(first, field, None), getattr(second, field, None)
        if isinstance(a, int) or isinstance(b, int):
            totals[field] = (a or 0) + (b or 0)
    return second.model_copy(update=totals)


def _parts(response: Any) -> list[Any]:
    content = getattr(response, "content", None)
    return list(getattr(content, "parts", None) or ())


def _text(parts: list[Any]) -> str:
    return "".join(
        p.text for p in parts if isinstance(p.text, str) and not getattr(p, "thought", False)
    )


def _is_partial(response: Any) -> bool:
    return getattr(response, "partial", None) is True


def _is_complete(guard: Any, response: Any) -> bool:
    try:
        return getattr(response, "partial", None) is not True
    except Exception as exc:  # pragma: no cover - a response type we do not know
        guard.telemetry.internal_error("google_adk.model_turn", exc)
        return False


def _response_report(response: Any, invocation_context: Any, llm_request: Any) -> dict[str, Any]:
    """The ``observe_llm_response`` arguments of one complete ``LlmResponse``."""
    content = getattr(response, "content", None)
    said = False
    requested: list[tuple[str, Any]] = []
    for part in getattr(content, "parts", None) or ():
        call = getattr(part, "function_call", None)
        if call is not None and isinstance(call.name, str):
            requested.append((call.name, call.args))
        text = getattr(part, "text", None)
        if isinstance(text, str) and text.strip() and not getattr(part, "thought", False):
            said = True
    usage = getattr(response, "usage_metadata", None)
    output = _tokens(getattr(usage, "candidates_token_count", None))
    thoughts = _tokens(getattr(usage, "thoughts_token_count", None))
    if output is not None and thoughts is not None:
        output += thoughts  # Gemini bills thinking as output
    agent_name = getattr(getattr(invocation_context, "agent", None), "name", None)
    return {
        "model": _model_name(llm_request),
        "finish_reason": _finish_reason(getattr(response, "finish_reason", None)),
        "input_tokens": _tokens(getattr(usage, "prompt_token_count", None)),
        "output_tokens": output,
        "empty": not said and not requested,
        "requested_tool_calls": requested,
        "agent_name": agent_name if isinstance(agent_name, str) else None,
    }


def _model_name(llm_request: Any) -> str | None:
    name = getattr(llm_request, "model", None)
    return name if isinstance(name, str) and name else None


def _finish_reason(value: Any) -> str | None:
    """``google.genai.types.FinishReason`` (an ``Enum`` of ``str``): its name, ``STOP``,
    ``MAX_TOKENS``, ...; the core compares finish reasons case-insensitively."""
    name = getattr(value, "name", value)
    return name if isinstance(name, str) and name else None


def _tokens(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
