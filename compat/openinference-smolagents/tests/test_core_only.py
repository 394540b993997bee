"""Our core alone beside OpenInference's smolagents instrumentation, observe mode: its spans
(an ``<Agent>.run`` AGENT span, a CHAIN span per step, a TOOL span per tool call) are all the
guard sees."""

from __future__ import annotations

import pytest
from agents import TASK, empty_search, looping_agent, paged_search, productive_agent
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.compat_checks import (
    assert_no_stop_on_their_tools,
    assert_stopped_then_completed,
    executions_at_first_stop,
)


def test_a_looping_agent_is_stopped_within_the_fourth_call(observe_loopguard) -> None:
    count = metric_counter(observe_loopguard)
    search = empty_search()
    at_stop = executions_at_first_stop(observe_loopguard, lambda: len(search.executions))
    looping_agent(search).run(TASK)

    assert len(search.executions) == 8  # observe mode: smolagents' max_steps ends it
    assert at_stop() <= 4
    (run,) = observe_loopguard.named("loopguard.run")
    assert run.attributes["loopguard.run.state"] == "stopped"
    assert count("loopguard.internal_errors") == 0


@pytest.mark.parametrize("hidden", [False, True], ids=["content", "content hidden"])
def test_a_productive_agent_gets_no_stop(observe_loopguard, request, hidden: bool) -> None:
    if hidden:
        request.getfixturevalue("content_hidden")
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
