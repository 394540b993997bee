"""pydantic-ai's own instrumentation beside our pydantic-ai package, enforce mode.

pydantic-ai makes the spans (we make none) and the processor reads them; our wrappers veto
before each tool call and model request. With content on, the loop is interrupted; the
turns count once (its ``chat`` spans report them, our model-request wrapper does not).
With content off its spans record no arguments nor results: the loop is not claimed
(docs/compatibility.md), and the counts still hold.
"""

from __future__ import annotations

import pytest
from otel_loopguard_testing.compat_checks import assert_interrupted_in_each_invocation
from otel_loopguard_testing.metrics import metric_counter
from pydantic_ai.models.instrumented import InstrumentationSettings
from scripted_agents import FINAL_ANSWER, looping_agent, productive_agent

from otel_loopguard import LoopGuardInterrupt

QUESTION = "What does it cost?"
USAGE = (40, 10)


def _theirs(harness, content: bool = True) -> InstrumentationSettings:
    return InstrumentationSettings(tracer_provider=harness.provider, include_content=content)


def _run_span(harness):
    (span,) = harness.named("invoke_agent researcher")
    assert span.instrumentation_scope.name == "pydantic-ai"  # theirs; we make none
    return span


@pytest.mark.parametrize("invocations", [1, 2])
def test_the_looping_run_is_interrupted_after_at_most_four_executions(
    with_our_package, invocations
):
    harness = with_our_package(mode="enforce")

    def start():
        scenario = looping_agent(8, instrument=_theirs(harness))
        return lambda: scenario.agent.run_sync(QUESTION), lambda: len(scenario.executions)

    assert_interrupted_in_each_invocation(harness, invocations, start)


@pytest.mark.parametrize("content", [True, False], ids=["content-on", "content-off"])
def test_the_productive_run_completes_with_the_real_tokens(with_our_package, content):
    # five turns of 50 tokens: 250 fit a 260-token budget, 500 (each counted twice) do not
    harness = with_our_package(mode="enforce", token_budget=260, reserve_tokens=0)
    errors = metric_counter(harness)
    scenario = productive_agent(instrument=_theirs(harness, content), usage=USAGE)

    assert scenario.agent.run_sync(QUESTION).output == FINAL_ANSWER

    assert len(scenario.model_calls) == 5
    assert len(scenario.executions) == 4
    assert [d for d, _ in harness.decided] == []  # no budget STOP, not even a warning
    assert errors("loopguard.internal_errors") == 0


@pytest.mark.parametrize("content", [True, False], ids=["content-on", "content-off"])
def test_a_token_budget_stops_at_the_turn_that_goes_over_it(with_our_package, content):
    # 50 tokens a turn: the third goes over 120 (counted twice, the second would)
    harness = with_our_package(mode="enforce", token_budget=120)
    scenario = productive_agent(instrument=_theirs(harness, content), usage=USAGE)

    with pytest.raises(LoopGuardInterrupt) as raised:
        scenario.agent.run_sync(QUESTION)

    assert raised.value.decision.detectors == ("budget",)
    assert len(scenario.model_calls) == 3
    assert len(scenario.executions) == 2  # the third turn's search never ran
    _run_span(harness)


def test_with_content_off_our_gate_spans_the_calls_and_the_loop_is_interrupted(with_our_package):
    """Their spans carry no arguments nor results: our package spans each call around
    theirs (signatures, never content), and the loop is interrupted all the same."""
    harness = with_our_package(mode="enforce")
    errors = metric_counter(harness)
    scenario = looping_agent(8, instrument=_theirs(harness, False))

    with pytest.raises(LoopGuardInterrupt):
        scenario.agent.run_sync(QUESTION)

    assert 1 <= len(scenario.executions) <= 4, scenario.executions
    ours = [
        s
        for s in harness.tool_spans("search")
        if s.instrumentation_scope.name == "otel_loopguard_pydantic_ai"
    ]
    assert ours and all("gen_ai.tool.call.arguments" not in s.attributes for s in ours)
    assert errors("loopguard.internal_errors") == 0
    harness.assert_every_span_ended_once()
