"""Our core alone beside OpenInference's OpenAI Agents SDK instrumentation, observe mode: its
spans (an ``Agent workflow`` span, the agent's AGENT span, a CHAIN span per turn, a TOOL span
per function call) are all the guard sees."""

from __future__ import annotations

from agents import Runner
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.compat_checks import (
    assert_loop_observed,
    assert_no_stop_on_their_tools,
    assert_stopped_then_completed,
)
from scripted_agents import FINAL_ANSWER, looping_agent, productive_agent


def test_a_looping_agent_is_stopped_within_the_fourth_call(observe_loopguard) -> None:
    def start():
        scenario = looping_agent()
        run = lambda: Runner.run_sync(scenario.agent, "What does it cost?")  # noqa: E731
        return run, lambda: len(scenario.executions)

    assert_loop_observed(observe_loopguard, start, executions=8)


def test_a_productive_agent_gets_no_stop(observe_loopguard, hidden: bool) -> None:
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
