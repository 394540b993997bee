"""Our OpenAI SDK package beside OpenInference's OpenAI instrumentation, enforce mode: their
``ChatCompletion`` span ends inside our ``chat`` span (they wrap the client's request, below
our wrapper); each model call counts once, and what their span's request tells (the tools'
answers) is enforced by ours before the next tools run."""

from __future__ import annotations

import pytest
from hand_written import looping
from loop_checks import assert_budget_stops_the_third_request, assert_productive_counted_once
from otel_loopguard_testing import metric_counter

from otel_loopguard import LoopGuardInterrupt
from otel_loopguard.guard import get_guard


@pytest.mark.parametrize("invocations", [1, 2])
def test_the_looping_loop_is_interrupted_after_at_most_four_executions(
    beside_ours, invocations
) -> None:
    harness = beside_ours(mode="enforce")
    count = metric_counter(harness)
    tracer = harness.app_tracer()
    with tracer.start_as_current_span("handle request"):
        for _ in range(invocations):
            loop = looping()
            with pytest.raises(LoopGuardInterrupt), get_guard().agent_run(tracer, "assistant"):
                loop.run()
            assert 1 <= len(loop.executions) <= 4, loop.executions
    states = [s.attributes["loopguard.run.state"] for s in harness.named("invoke_agent assistant")]
    assert states == ["stopped"] * invocations
    assert count("loopguard.internal_errors") == 0


def test_the_productive_loop_completes_with_the_real_steps_and_tokens(beside_ours) -> None:
    assert_productive_counted_once(beside_ours(mode="enforce"))


def test_a_token_budget_stops_at_the_right_turn(beside_ours) -> None:
    assert_budget_stops_the_third_request(beside_ours(mode="enforce", token_budget=120))


def test_with_their_content_hidden_the_loop_is_counted_not_claimed(
    content_hidden, beside_ours
) -> None:
    """The tools are plain code (no tool span, no gate): with their content hidden no request
    says what they returned, so nothing shows the calls made no progress; the turns still
    count once each (a token budget or max_steps would still stop it)."""
    harness = beside_ours(mode="enforce")
    count = metric_counter(harness)
    loop = looping()
    with get_guard().agent_run(harness.app_tracer(), "assistant"):
        loop.run()
    assert loop.answer == "I gave up."
    assert harness.run_usage("assistant") == (9 * 10, 9 * 5)  # nine turns, once each
    assert not harness.decision_events("stop")
    assert count("loopguard.internal_errors") == 0
