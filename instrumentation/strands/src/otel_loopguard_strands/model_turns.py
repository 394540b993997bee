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
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import Any

from otel_loopguard import LoopGuardInterrupt
from otel_loopguard.kit.streamed_turns import model_turn_stream
from otel_loopguard_strands.cycles import end_cycle_span


def invoke_model_terminal_wrapper(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Wrap ``_make_invoke_model_terminal(...)``: the terminal it returns, observed."""
    terminal = wrapped(*args, **kwargs)
    cycle_span = args[1] if len(args) > 1 else kwargs.get("cycle_span")

    def observed_terminal(context: Any) -> AsyncGenerator[Any, None]:
        return _observed_call(terminal(context), context, cycle_span)

    return observed_terminal


async def _observed_call(
    events: AsyncGenerator[Any, None], context: Any, cycle_span: Any
) -> AsyncGenerator[Any, None]:
    """The terminal's events as one model turn (:func:`~otel_loopguard.kit.streamed_turns.
    model_turn_stream`), reported from its ``ModelStopReason`` once the stream is exhausted;
    our interrupt ends the cycle span Strands would leave open (see :mod:`.cycles`)."""
    stops: list[Any] = []

    def add(event: Any) -> None:
        if isinstance(event, dict) and "stop" in event:
            stops.append(event["stop"])

    def read() -> dict[str, Any] | None:
        return _stop_report(stops[-1], context) if stops else None

    turn = model_turn_stream(events, read, package="strands", add=add)
    try:
        async for event in turn:
            yield event
    except LoopGuardInterrupt as interrupt:
        end_cycle_span(cycle_span, interrupt)
        raise
    finally:
        await turn.aclose()


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
