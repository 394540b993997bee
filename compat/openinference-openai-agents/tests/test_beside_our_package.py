"""Our OpenAI Agents SDK package beside OpenInference's instrumentation of it, enforce mode:
their spans are made from the SDK's own trace (their tree, under our ``invoke_agent`` span);
each tool execution and each model turn counts once."""

from __future__ import annotations

from typing import Any

import pytest
from agents import Runner, Usage
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.compat_checks import (
    assert_budget_exceeded,
    assert_completed_unstopped,
    assert_interrupted,
    openinference_spans,
)
from scripted_agents import FINAL_ANSWER, looping_agent, productive_agent

from otel_loopguard import LoopGuardInterrupt

TURN_USAGE = Usage(requests=1, input_tokens=40, output_tokens=10, total_tokens=50)


def _looping() -> tuple[Any, Any]:
    scenario = looping_agent()
    return (
        lambda: Runner.run_sync(scenario.agent, "What does it cost?"),
        lambda: len(scenario.executions),
    )


def test_a_looping_agent_is_interrupted_in_every_invocation(beside_ours) -> None:
    harness = beside_ours(mode="enforce")
    assert_interrupted(harness, _looping, invocations=2, agent="researcher")


def test_a_productive_agent_completes_with_the_same_answer(beside_ours) -> None:
    harness = beside_ours(mode="enforce")
    count = metric_counter(harness)
    scenario = productive_agent()
    result = Runner.run_sync(scenario.agent, "What does it cost?")
    assert result.final_output == FINAL_ANSWER
    assert len(openinference_spans(harness, "TOOL")) == 4  # both at work
    assert_completed_unstopped(harness, count, "researcher")


def test_steps_and_tokens_on_the_agent_span_are_the_real_ones(beside_ours) -> None:
    harness = beside_ours(mode="enforce")
    count = metric_counter(harness)
    scenario = productive_agent()
    scenario.model.set_default_usage(TURN_USAGE)
    Runner.run_sync(scenario.agent, "What does it cost?")
    assert harness.run_usage("researcher") == (200, 50)  # five turns of 40 + 10
    assert not harness.named("loopguard.run")  # their agent spans are inside ours: no run
    assert count("loopguard.runs") == 1
    assert count("loopguard.internal_errors") == 0


def test_a_token_budget_stops_at_the_third_turn(beside_ours) -> None:
    harness = beside_ours(mode="enforce", token_budget=120)  # 50 a turn: the 3rd goes over
    count = metric_counter(harness)
    scenario = productive_agent()
    scenario.model.set_default_usage(TURN_USAGE)
    with pytest.raises(LoopGuardInterrupt) as stopped:
        Runner.run_sync(scenario.agent, "What does it cost?")
    assert len(scenario.executions) == 2  # the third turn's search never ran
    assert_budget_exceeded(harness, count, stopped, "researcher", (120, 30))


def test_with_their_content_hidden_the_looping_agent_is_interrupted_too(
    content_hidden, beside_ours
) -> None:
    assert_interrupted(beside_ours(mode="enforce"), _looping, agent="researcher")
