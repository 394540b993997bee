"""Our smolagents package beside OpenInference's smolagents instrumentation, enforce mode.

Their ``<Agent>.run`` span is the same invocation as our ``invoke_agent`` span inside it: one
run. Their wrapper ends its span and detaches its context only on success or an
``Exception``; our interrupt is a ``BaseException``, and our package leaves their span ended
and the caller's context current (otel_loopguard_smolagents/foreign_runs.py), whichever wrapper
is outside the other."""

from __future__ import annotations

from typing import Any

import pytest
from agents import TASK, TURN_TOKENS, looping_run, paged_search, productive_agent
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.compat_checks import (
    assert_budget_exceeded,
    assert_completed_unstopped,
    assert_interrupted,
)

from otel_loopguard import LoopGuardInterrupt


def _their_run_spans(harness: Any) -> list[Any]:
    return [s for s in harness.spans() if s.name == "ToolCallingAgent.run"]


def _interrupted_twice(harness: Any) -> None:
    """Two looping invocations in a row, each interrupted after at most 4 executions; each
    a run of its own, in a trace of its own, nothing left open or attached."""
    assert_interrupted(harness, looping_run, invocations=2, agent="ToolCallingAgent")
    ours = harness.named("invoke_agent ToolCallingAgent")
    theirs = _their_run_spans(harness)
    assert len(theirs) == 2  # ended (so exported), as interrupted
    assert all(s.attributes["error.type"] == "LoopGuardInterrupt" for s in theirs)
    assert len({s.context.trace_id for s in theirs}) == 2  # the second is not inside the first
    # one run per invocation: ours carries the run of their span
    for mine, their in zip(ours, theirs, strict=True):
        assert mine.parent.span_id == their.context.span_id
        assert mine.attributes["loopguard.run.id"].endswith(format(their.context.span_id, "016x"))


def test_a_looping_agent_is_interrupted_in_every_invocation(beside_ours) -> None:
    _interrupted_twice(beside_ours(mode="enforce"))


def test_with_their_wrapper_outside_ours_too(ours_inside) -> None:
    _interrupted_twice(ours_inside(mode="enforce"))


def test_a_productive_agent_completes_with_the_same_answer(beside_ours) -> None:
    harness = beside_ours(mode="enforce")
    count = metric_counter(harness)
    search = paged_search()
    assert productive_agent(search).run(TASK) == "found after 3 searches"
    assert count("loopguard.runs") == 1
    assert_completed_unstopped(harness, count, "ToolCallingAgent")


def test_steps_and_tokens_on_the_agent_span_are_the_real_ones(beside_ours) -> None:
    harness = beside_ours(mode="enforce")
    count = metric_counter(harness)
    productive_agent(paged_search()).run(TASK)
    turns = 4  # three searches, then the final answer
    assert harness.run_usage("ToolCallingAgent") == (turns * TURN_TOKENS[0], turns * TURN_TOKENS[1])
    (theirs,) = _their_run_spans(harness)
    assert theirs.attributes["llm.token_count.prompt"] == turns * TURN_TOKENS[0]  # theirs agree
    assert count("loopguard.internal_errors") == 0


def test_a_token_budget_stops_at_the_right_turn(beside_ours) -> None:
    harness = beside_ours(mode="enforce", token_budget=60)  # 25 a turn: the 3rd goes over
    count = metric_counter(harness)
    search = paged_search()
    agent = productive_agent(search)
    with pytest.raises(LoopGuardInterrupt) as stopped:
        agent.run(TASK)
    assert agent.model.calls == 3  # 75 tokens after the third turn: no fourth model call
    # three turns of 20 + 5, counted once
    assert_budget_exceeded(harness, count, stopped, "ToolCallingAgent", (60, 15))


def test_with_their_content_hidden_the_looping_agent_is_interrupted_too(
    content_hidden, beside_ours
) -> None:
    assert_interrupted(beside_ours(mode="enforce"), looping_run, agent="ToolCallingAgent")
