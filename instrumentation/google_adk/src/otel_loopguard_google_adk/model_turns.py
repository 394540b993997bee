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
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import Any

from otel_loopguard import get_guard
from otel_loopguard.kit.model_turn import report_turn


def call_llm_wrapper(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Wrap ``BaseLlmFlow._call_llm_async(invocation_context, llm_request,
    model_response_event)``."""
    invocation_context = args[0] if args else kwargs.get("invocation_context")
    llm_request = args[1] if len(args) > 1 else kwargs.get("llm_request")
    return _observed_call(wrapped(*args, **kwargs), invocation_context, llm_request)


async def _observed_call(
    responses: AsyncGenerator[Any, None], invocation_context: Any, llm_request: Any
) -> AsyncGenerator[Any, None]:
    guard = get_guard()
    try:
        guard.preflight_llm()
        first_turn = None
        reported = False
        while True:
            turn = guard.model_turn()  # never raises
            if first_turn is None:
                first_turn = turn
            try:
                response = await responses.__anext__()
            except StopAsyncIteration:
                return
            finally:
                turn.end()
            if (
                turn.in_run
                and not (reported or turn.reported or first_turn.reported)
                and _is_complete(guard, response)
            ):
                reported = True
                report_turn(  # raises only our interrupt
                    guard, "google_adk", _response_report, response, invocation_context, llm_request
                )
            yield response
    finally:
        await responses.aclose()


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
