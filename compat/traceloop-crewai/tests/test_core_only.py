"""Our core beside OpenLLMetry's CrewAI instrumentation, observe mode: alone it shows no
model call and no tool call of a CrewAI 1.x crew on a native provider (so nothing can be
judged); with their OpenAI instrumentation added, the tools' calls and results are read
from the model requests' messages and the loop is detected."""

from __future__ import annotations

import pytest
from crews import (
    ANSWER,
    kickoff,
    looping_search,
    looping_turns,
    productive_search,
    productive_turns,
    starter,
)
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.compat_checks import assert_loop_observed, assert_stopped_then_completed


def _run(harness):
    (run,) = harness.named("loopguard.run")
    return run.attributes


def test_their_crewai_instrumentation_alone_sees_no_tool_call(observe_loopguard) -> None:
    """What docs/compatibility.md says a CrewAI 1.x user must add something for: their
    crew, task and agent spans, and not one model or tool span."""
    search = looping_search()
    kickoff(looping_turns(4), search)

    assert len(search.executions) == 4
    assert observe_loopguard.named("crewai.workflow")  # their spans are there
    kinds = {s.attributes.get("gen_ai.operation.name") for s in observe_loopguard.spans()}
    assert kinds == {"invoke_agent", None}  # none of chat / execute_tool
    assert _run(observe_loopguard)["loopguard.run.tool_calls"] == 0
    assert _run(observe_loopguard)["loopguard.run.steps"] == 0
    assert observe_loopguard.decided == []


def test_with_their_openai_instrumentation_a_looping_crew_is_stopped_within_the_fourth_call(
    with_their_openai,
) -> None:
    harness = with_their_openai(mode="observe")
    result = assert_loop_observed(harness, starter(4), executions=4)
    assert str(result) == "I could not find it."  # observe mode: the crew went on
    assert _run(harness)["loopguard.run.tool_calls"] == 4


@pytest.mark.parametrize("content", ["true", "false"], ids=["content-on", "content-off"])
def test_with_their_openai_instrumentation_a_productive_crew_gets_no_stop(
    with_their_openai, content, monkeypatch
) -> None:
    monkeypatch.setenv("TRACELOOP_TRACE_CONTENT", content)
    harness = with_their_openai(mode="observe")
    count = metric_counter(harness)
    search = productive_search()

    assert str(kickoff(productive_turns(), search)) == ANSWER
    assert search.executions == ["pricing", "seats", "refunds"]
    assert [d for d, _ in harness.decided if d.action.value == "stop"] == []
    assert _run(harness)["loopguard.run.state"] == "completed"
    assert _run(harness)["loopguard.run.steps"] == 4
    assert count("loopguard.internal_errors") == 0


def test_two_invocations_under_one_application_span_are_two_runs(with_their_openai) -> None:
    harness = with_their_openai(mode="observe")
    count = metric_counter(harness)
    with harness.app_tracer().start_as_current_span("handle request"):
        kickoff(looping_turns(4), looping_search())
        kickoff(productive_turns(), productive_search())

    assert_stopped_then_completed(harness, count)
