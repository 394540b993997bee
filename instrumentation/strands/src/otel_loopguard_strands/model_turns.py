"""The model side of each Strands event-loop cycle, for budgets, max steps and empty answers.

Why this hook point (strands-agents 1.62): every provider (Bedrock, Anthropic, OpenAI,
LiteLLM, a user's own) overrides ``Model.stream``, so wrapping the base class would see none
of them. Each cycle of the event loop calls its model through the terminal of its
``InvokeModelStage`` middleware chain, which ``_make_invoke_model_terminal(agent,
cycle_span, tracer, model_state)`` builds per call (a retry builds another): the terminal
opens Strands' ``chat`` span, streams the model (``stream_messages``), yields the
``ModelStopReason`` event (stop reason, assembled message, usage) and ends the span. A
middleware that answers for the model never calls the terminal: no model call, no turn.

- Before the call: the pre-flight check (a stopped run, ``max_steps``, the run's timeout, no
  token headroom), so in ``enforce`` mode a vetoed call is never made nor paid for.
- One :meth:`~otel_loopguard.LoopGuard.model_turn` per pull of the terminal's
  generator; when it is exhausted, unless a layer below reported the turn, one
  ``llm_response`` with its usage (``inputTokens``, ``outputTokens``), stop reason and
  requested tool uses. A STOP there (a token budget) interrupts the run before those tools
  run: the event loop drains the stream before it executes them.

A trap: Strands ends its ``chat`` span after the ``ModelStopReason`` was yielded, on the
pull that exhausts the stream. Under ``opentelemetry-instrument`` (Strands traces to the
global tracer provider) the span processor reports the turn from that span; so the turn is
reported, by us or not, only once that last pull is over, never at the stop event.

Delivering recommendations (``enforce`` mode): a replan's recommendation waiting for the
run goes into the terminal's context (``InvokeModelContext``, whose ``messages`` Strands
already deep-copied from the agent's) right after the pre-flight check, as a
``{"text": ...}`` block appended to a copy of the trailing user message (after its
``toolResult`` blocks: Bedrock and Anthropic reject two user turns in a row), or as a new
user message after an assistant one; the context is replaced (``ctx.replace``), so
``agent.messages`` never holds it and the model sees it once. The block counts as a
per-call trailing block (``dynamic_trailing_blocks``), as Strands' own context-status
block does, so a prompt-cache point stays ahead of it.

Strands raises ``MaxTokensReachedException`` on an answer cut off at the token limit, and
ends the invocation on an empty ``end_turn``. When such an answer's report queues its
continuation prompt or re-prompt, the ``ModelStopReason`` (the terminal's last event,
which the event loop reads only once the stream is over) is held back and the terminal run
again at once on the same context plus the answer so far (an assistant message of its text)
with the prompt delivered; the event loop then gets one ``ModelStopReason``: the text
joined with its continuation (usage summed), or the re-prompted answer instead of the empty
one. The text deltas of both calls stream through as they come.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from typing import Any

from otel_loopguard import LoopGuardInterrupt, get_guard
from otel_loopguard.kit.model_turn import ModelCall
from otel_loopguard.kit.recommendations import (
    REASK_DETECTORS,
    can_deliver,
    combined_answer,
    deliver_waiting,
    reask_request,
    reasks_allowed,
    waiting_detector,
)
from otel_loopguard.kit.streamed_turns import model_turn_stream
from otel_loopguard_strands.cycles import end_cycle_span

PACKAGE = "strands"


def invoke_model_terminal_wrapper(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Wrap ``_make_invoke_model_terminal(...)``: the terminal it returns, observed."""
    terminal = wrapped(*args, **kwargs)
    cycle_span = args[1] if len(args) > 1 else kwargs.get("cycle_span")

    def observed_terminal(context: Any) -> AsyncGenerator[Any, None]:
        return _observed_call(terminal, context, cycle_span)

    return observed_terminal


def delivering() -> None:
    """Said when the hooks are installed: this package delivers recommendations."""
    can_deliver(PACKAGE)


async def _observed_call(
    terminal: Callable[[Any], AsyncGenerator[Any, None]], context: Any, cycle_span: Any
) -> AsyncGenerator[Any, None]:
    """The terminal's events, its ``ModelStopReason`` held back until the stream is over
    and the model asked again while its report queued a re-ask (module docstring); our
    interrupt ends the cycle span Strands would leave open (see :mod:`.cycles`)."""
    guard = get_guard()
    request = context
    so_far: Any = None  # the answer held back, joined with its continuations
    detector: str | None = None
    try:
        for _ in range(reasks_allowed(guard) + 1):
            held: Any = None
            async with aclosing(_one_call(guard, terminal, request)) as events:
                async for event in events:
                    if _is_stop(event):
                        if held is not None:  # pragma: no cover - one stop per call
                            yield held
                        held = event
                        continue
                    yield event
            if held is None:
                return
            answer = combined_answer(guard, PACKAGE, _join, so_far, held, detector)
            detector = waiting_detector(guard, PACKAGE)
            follow_up = None
            if detector in REASK_DETECTORS:
                call = ModelCall(None, (context,), {}, result=answer)
                follow_up = reask_request(guard, call, _again, PACKAGE)
            if follow_up is None:
                yield answer
                return
            so_far, request = answer, follow_up[0][0]
        if so_far is not None:  # pragma: no cover - the detectors stop asking before
            yield so_far
    except LoopGuardInterrupt as interrupt:
        end_cycle_span(cycle_span, interrupt)
        raise


def _one_call(
    guard: Any, terminal: Callable[[Any], AsyncGenerator[Any, None]], context: Any
) -> AsyncGenerator[Any, None]:
    """One run of the terminal as one model turn (:func:`~otel_loopguard.kit.streamed_turns.
    model_turn_stream`), reported from its ``ModelStopReason`` once the stream is exhausted."""
    stops: list[Any] = []

    def add(event: Any) -> None:
        if _is_stop(event):
            stops.append(event["stop"])

    def read() -> dict[str, Any] | None:
        return _stop_report(stops[-1], context) if stops else None

    return model_turn_stream(_delivered(guard, terminal, context), read, package=PACKAGE, add=add)


async def _delivered(
    guard: Any, terminal: Callable[[Any], AsyncGenerator[Any, None]], context: Any
) -> AsyncGenerator[Any, None]:
    """The terminal's events, on ``context`` with the run's waiting recommendation in it;
    pulled first after the pre-flight check, so a vetoed call takes nothing."""
    call = ModelCall(None, (context,), {})
    deliver_waiting(guard, call, deliver_message, PACKAGE)
    async with aclosing(terminal(call.args[0])) as events:
        async for event in events:
            yield event


def _is_stop(event: Any) -> bool:
    return isinstance(event, dict) and "stop" in event


def deliver_message(call: ModelCall, message: str) -> bool:
    """Add ``message`` to the context's messages as a text block at the end of the trailing
    user message (after its ``toolResult`` blocks), or as a new user message after an
    assistant one; new lists and dicts, the context replaced."""
    (context,) = call.args
    messages = list(context.messages)
    block = {"text": message}
    trailing = context.dynamic_trailing_blocks
    if messages and messages[-1].get("role") == "user":
        last = messages[-1]
        messages[-1] = {**last, "content": [*(last.get("content") or ()), block]}
        trailing += 1  # a per-call block: a cache point stays ahead of it
    else:
        messages.append({"role": "user", "content": [block]})
        trailing = 1 if trailing else 0
    call.args = (context.replace(messages=messages, dynamic_trailing_blocks=trailing),)
    return True


def _again(call: ModelCall, detector: str) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """The re-ask after ``call.result`` (a ``ModelStopReason``): the original context, plus
    the truncated answer's text as an assistant message (an empty answer adds nothing:
    Bedrock rejects an empty message); the prompt is delivered into it."""
    (context,) = call.args
    if detector != "truncation":
        return (context.replace(messages=list(context.messages)),), {}
    _stop_reason, message, _usage, _metrics = call.result["stop"]
    text = _text(message)
    if not text:
        return None  # nothing to continue from
    answer = {"role": "assistant", "content": [{"text": text}]}
    return (context.replace(messages=[*context.messages, answer]),), {}


def _join(first: Any, second: Any) -> Any:
    """One ``ModelStopReason``: the text of both answers, then the second's other blocks
    (its tool uses), the second's stop reason and metrics, usage summed."""
    from strands.types.events import ModelStopReason

    _, first_message, first_usage, _ = first["stop"]
    stop_reason, message, usage, metrics = second["stop"]
    others = [b for b in message.get("content") or () if "text" not in b]
    joined = {
        **message,
        "content": [{"text": _text(first_message) + _text(message)}, *others],
    }
    total = dict(usage)
    for key, value in first_usage.items():
        if isinstance(value, int) and isinstance(total.get(key, 0), int):
            total[key] = total.get(key, 0) + value
    return ModelStopReason(stop_reason=stop_reason, message=joined, usage=total, metrics=metrics)


def _text(message: Any) -> str:
    return "".join(
        b["text"] for b in message.get("content") or () if isinstance(b.get("text"), str)
    )


def _stop_report(stop: Any, context: Any) -> dict[str, Any]:
    """The ``observe_llm_response`` arguments of one ``ModelStopReason`` (``(stop_reason,
    message, usage, metrics)``)."""
    stop_reason, message, usage, _metrics = stop
    said = False
    requested: list[tuple[str, Any]] = []
    for block in message.get("content") or ():
        tool_use = block.get("toolUse")
        if isinstance(tool_use, dict) and isinstance(tool_use.get("name"), str):
            requested.append((tool_use["name"], tool_use.get("input")))
        text = block.get("text")
        if isinstance(text, str) and text.strip():
            said = True
    agent_name = getattr(getattr(context, "agent", None), "name", None)
    return {
        "model": _model_id(getattr(context, "model", None)),
        "finish_reason": stop_reason if isinstance(stop_reason, str) else None,
        "input_tokens": _tokens(usage.get("inputTokens")),
        "output_tokens": _tokens(usage.get("outputTokens")),
        "empty": not said and not requested,
        "requested_tool_calls": requested,
        "agent_name": agent_name if isinstance(agent_name, str) else None,
    }


def _model_id(model: Any) -> str | None:
    config = getattr(model, "config", None)
    model_id = config.get("model_id") if isinstance(config, dict) else None
    return model_id if isinstance(model_id, str) and model_id else None


def _tokens(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
