"""Our core alone beside OpenInference's smolagents instrumentation, observe mode: its spans
(an ``<Agent>.run`` AGENT span, a CHAIN span per step, a TOOL span per tool call) are all the
guard sees."""

from __future__ import annotations

import pytest
from agents import TASK, empty_search, looping_agent, paged_search, productive_agent
from otel_loopguard_testing import metric_counter


def test_a_looping_agent_is_stopped_within_the_fourth_call(observe_loopguard) -> None:
    count = metric_counter(observe_loopguard)
    search = empty_search()
    decided: list[tuple[str, int]] = []
    observe_loopguard.guard.on_decision(
        lambda d, _e: decided.append((d.action.value, len(search.executions)))
    )
    looping_agent(search).run(TASK)

    assert len(search.executions) == 8  # observe mode: smolagents' max_steps ends it
    assert next(n for action, n in decided if action == "stop") <= 4
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
    assert len(tools) == 3
    assert (tools[0].attributes["output.value"] == "__REDACTED__") is hidden
    assert not observe_loopguard.decision_events("stop")
    assert count("loopguard.internal_errors") == 0


def test_two_invocations_under_one_application_span_are_two_runs(observe_loopguard) -> None:
    count = metric_counter(observe_loopguard)
    with observe_loopguard.app_tracer().start_as_current_span("handle_request"):
        looping_agent(empty_search()).run(TASK)
        productive_agent(paged_search()).run(TASK)

    first, second = observe_loopguard.named("loopguard.run")
    assert first.attributes["loopguard.run.id"] != second.attributes["loopguard.run.id"]
    assert first.attributes["loopguard.run.state"] == "stopped"
    assert second.attributes["loopguard.run.state"] == "completed"
    assert count("loopguard.runs") == 2
    assert count("loopguard.internal_errors") == 0
