"""The official openai-v2 instrumentation beside our OpenAI package, enforce mode.

Theirs makes the ``chat`` span, ours none (it sees theirs open around the call) but
enforces before each request and reports each answer, once: theirs carries the same
``gen_ai.response.id``. The tools' answers come from their requests' messages.
"""

from __future__ import annotations

import pytest
from hand_written import ANSWER, looping_in_a_run, productive
from otel_loopguard_testing.compat_checks import assert_interrupted_in_each_invocation
from otel_loopguard_testing.metrics import metric_counter

from otel_loopguard import LoopGuardInterrupt
from otel_loopguard.guard import get_guard

OUR_SCOPE = "otel_loopguard_openai"


def _our_run(harness):
    (span,) = harness.named("invoke_agent assistant")
    return span


@pytest.mark.parametrize("invocations", [1, 2])
def test_the_looping_run_is_interrupted_after_at_most_four_executions(
    with_openai_package, invocations
):
    harness = with_openai_package(mode="enforce")

    assert_interrupted_in_each_invocation(harness, invocations, looping_in_a_run(harness))

    ours = [s for s in harness.spans("chat ") if s.instrumentation_scope.name == OUR_SCOPE]
    assert ours == []  # theirs only, never a second chat span of ours


def test_the_productive_run_completes_with_the_real_steps_and_tokens(with_openai_package):
    harness = with_openai_package(mode="enforce")
    errors = metric_counter(harness)
    loop = productive()

    with get_guard().agent_run(harness.app_tracer(), "assistant"):
        assert loop.run() == ANSWER

    run = _our_run(harness)
    assert run.attributes["loopguard.run.state"] == "completed"
    assert run.attributes["gen_ai.usage.input_tokens"] == 5 * 40  # five turns, once each
    assert run.attributes["gen_ai.usage.output_tokens"] == 5 * 10
    assert harness.decision_events("stop") == []
    assert errors("loopguard.internal_errors") == 0


def test_a_token_budget_stops_at_the_turn_that_goes_over_it(with_openai_package):
    # 50 tokens a turn: the third goes over 120 (counted twice, the second would)
    harness = with_openai_package(mode="enforce", token_budget=120)
    loop = productive()

    with pytest.raises(LoopGuardInterrupt) as raised:
        with get_guard().agent_run(harness.app_tracer(), "assistant"):
            loop.run()

    assert raised.value.decision.detectors == ("budget",)
    assert len(loop.api.requests) == 3
    run = _our_run(harness)
    assert run.attributes["loopguard.run.state"] == "budget_exceeded"
    assert run.attributes["gen_ai.usage.input_tokens"] == 3 * 40
