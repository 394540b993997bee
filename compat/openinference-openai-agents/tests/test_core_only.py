"""Our core alone beside OpenInference's OpenAI Agents SDK instrumentation, observe mode: its
spans (an ``Agent workflow`` span, the agent's AGENT span, a CHAIN span per turn, a TOOL span
per function call) are all the guard sees."""

from __future__ import annotations

import pytest
from agents import Runner
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.compat_checks import (
    assert_no_stop_on_their_tools,
    assert_stopped_then_completed,
    executions_at_first_stop,
)
from scripted_agents import FINAL_ANSWER, looping_agent, productive_agent


def test_a_looping_agent_is_stopped_within_the_fourth_call(observe_loopguard) -> None:
    count = metric_counter(observe_loopguard)
    scenario = looping_agent()
    at_stop = executions_at_first_stop(observe_loopguard, lambda: len(scenario.executions))
    Runner.run_sync(scenario.agent, "What does it cost?")

    assert len(scenario.executions) == 8  # observe mode: the run goes on
    assert at_stop() <= 4
    (run,) = observe_loopguard.named("loopguard.run")
    assert run.attributes["loopguard.run.state"] == "stopped"
    assert count("loopguard.internal_errors") == 0


@pytest.mark.parametrize("hidden", [False, True], ids=["content", "content hidden"])
def test_a_productive_agent_gets_no_stop(observe_loopguard, request, hidden: bool) -> None:
    if hidden:
        request.getfixturevalue("content_hidden")
    count = metric_counter(observe_loopguard)
    scenario = productive_agent()
    result = Runner.run_sync(scenario.agent, "What does it cost?")

    assert result.final_output == FINAL_ANSWER
    assert len(scenario.executions) == 4
    tools = [s for s in observe_loopguard.spans() if s.attributes.get("tool.name") == "search"]
    assert_no_stop_on_their_tools(observe_loopguard, count, tools, 4, hidden)


def test_two_invocations_under_one_application_span_are_two_runs(observe_loopguard) -> None:
    count = metric_counter(observe_loopguard)
    with observe_loopguard.app_tracer().start_as_current_span("handle_request"):
        Runner.run_sync(looping_agent().agent, "What does it cost?")
        Runner.run_sync(productive_agent().agent, "What does it cost?")

    assert_stopped_then_completed(observe_loopguard, count)
