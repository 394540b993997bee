"""Our core alone beside OpenInference's smolagents instrumentation, observe mode: its spans
(an ``<Agent>.run`` AGENT span, a CHAIN span per step, a TOOL span per tool call) are all the
guard sees."""

from __future__ import annotations

from agents import TASK, empty_search, looping_agent, looping_run, paged_search, productive_agent
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.compat_checks import (
    assert_loop_observed,
    assert_no_stop_on_their_tools,
    assert_stopped_then_completed,
)


def test_a_looping_agent_is_stopped_within_the_fourth_call(observe_loopguard) -> None:
    # observe mode: smolagents' max_steps (8) ends it
    assert_loop_observed(observe_loopguard, looping_run, executions=8)


def test_a_productive_agent_gets_no_stop(observe_loopguard, hidden: bool) -> None:
    count = metric_counter(observe_loopguard)
    search = paged_search()
    answer = productive_agent(search).run(TASK)

    assert answer == "found after 3 searches"
    tools = [s for s in observe_loopguard.spans() if s.attributes.get("tool.name") == "search"]
    assert_no_stop_on_their_tools(observe_loopguard, count, tools, 3, hidden)


def test_two_invocations_under_one_application_span_are_two_runs(observe_loopguard) -> None:
    count = metric_counter(observe_loopguard)
    with observe_loopguard.app_tracer().start_as_current_span("handle_request"):
        looping_agent(empty_search()).run(TASK)
        productive_agent(paged_search()).run(TASK)

    assert_stopped_then_completed(observe_loopguard, count)
