"""A model span without usage never silences the count of one that has it (issue 17,
point 1).

OpenLLMetry's OpenAI Agents instrumentation makes an ``openai.response`` span
(``gen_ai.operation.name=chat``) inside the SDK's model call, with no tokens for the Chat
Completions model or with sensitive data off. A framework wrapper's turn is open around it
(our OpenAI Agents package): the span must leave the turn to the wrapper, which knows the
usage, or the run's tokens stay 0 and token budgets are silently off. compat/traceloop-
openai-agents drives the real instrumentation.
"""

from __future__ import annotations

from typing import Any

from otel_loopguard.guard import LoopGuard

from .helpers import Stack, make_stack

CHAT = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai"}


def _framework_turn(guard: LoopGuard, call_model: Any, usage: tuple[int, int]) -> None:
    """What our framework packages do around one model call."""
    guard.preflight_llm()
    with guard.model_turn() as turn:
        call_model()
    if turn.needs_report:
        guard.observe_llm_response(model="gpt-test", input_tokens=usage[0], output_tokens=usage[1])


def _their_span(stack: Stack, **usage: int) -> Any:
    def call() -> None:
        with stack.tracer.start_as_current_span("openai.response", attributes={**CHAT, **usage}):
            pass

    return call


def _run_totals(stack: Stack) -> tuple[Any, Any]:
    (span,) = stack.spans("invoke_agent researcher")
    return (
        span.attributes.get("gen_ai.usage.input_tokens"),
        span.attributes.get("gen_ai.usage.output_tokens"),
    )


def test_a_span_without_usage_leaves_the_turn_to_the_wrapper() -> None:
    stack = make_stack()
    with stack.guard.agent_run(stack.tracer, "researcher"):
        for _ in range(3):
            _framework_turn(stack.guard, _their_span(stack), (40, 10))

    assert _run_totals(stack) == (120, 30)


def test_a_span_with_usage_still_reports_the_turn_once() -> None:
    stack = make_stack()
    usage = {"gen_ai.usage.input_tokens": 40, "gen_ai.usage.output_tokens": 10}
    with stack.guard.agent_run(stack.tracer, "researcher"):
        for _ in range(3):
            _framework_turn(stack.guard, _their_span(stack, **usage), (40, 10))

    assert _run_totals(stack) == (120, 30)


def _calls_under_budget(span_usage: dict[str, int]) -> tuple[int, tuple[Any, Any]]:
    """Model calls made under a 120-token budget, and the run's totals."""
    stack = make_stack(mode="enforce", token_budget=120)
    calls: list[int] = []
    their_span = _their_span(stack, **span_usage)

    def call() -> None:
        calls.append(1)
        their_span()

    try:
        with stack.guard.agent_run(stack.tracer, "researcher"):
            for _ in range(5):
                _framework_turn(stack.guard, call, (40, 10))
    except BaseException as stopped:  # LoopGuardInterrupt
        assert type(stopped).__name__ == "LoopGuardInterrupt"
    return len(calls), _run_totals(stack)


def test_a_budget_stops_as_early_as_when_their_spans_carry_the_usage() -> None:
    with_usage = _calls_under_budget(
        {"gen_ai.usage.input_tokens": 40, "gen_ai.usage.output_tokens": 10}
    )
    assert with_usage[0] < 5  # the budget does stop that run
    assert _calls_under_budget({}) == with_usage


def test_without_a_wrapper_such_a_span_still_counts_as_a_step() -> None:
    """Core only (no framework package): the span is the only report of the turn."""
    stack = make_stack(max_steps=2)
    with stack.guard.agent_run(stack.tracer, "researcher"):
        for _ in range(3):
            _their_span(stack)()

    decisions = [e.attributes["loopguard.detectors"] for _s, e in stack.decision_events()]
    assert any("budget" in detectors for detectors in decisions)
