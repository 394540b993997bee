"""Our core alone beside Google ADK's own spans, observe mode, in both telemetry schemas
(``schema``: conftest): a looping agent is stopped by the 4th call where ADK records
content, a productive one is left alone with content recorded or not, and two sessions
under one application span are two runs."""

from __future__ import annotations

import json

from adk_agents import LOOPING_TURNS, looping_agent, looping_start
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.compat_checks import assert_loop_observed
from scripted_models import CountingSearch, final_text, new_runner, productive_agent, run

_ARGUMENTS = {"1": "gcp.vertex.agent.tool_call_args", "2": "gen_ai.tool.call.arguments"}
_RESULTS = {"1": "gcp.vertex.agent.tool_response", "2": "gen_ai.tool.call.result"}


def _tool_spans(harness) -> list:
    return harness.tool_spans("search")


def test_a_looping_agent_is_stopped_within_the_fourth_call(observe_loopguard, schema) -> None:
    events = assert_loop_observed(
        observe_loopguard, looping_start(LOOPING_TURNS), executions=LOOPING_TURNS
    )
    assert final_text(events) == "gave up"  # observe mode: the run went on to its end
    tools = _tool_spans(observe_loopguard)
    assert len(tools) == LOOPING_TURNS
    # the content the guard read is in ADK's own keys of this schema
    assert {json.loads(s.attributes[_ARGUMENTS[schema]])["query"] for s in tools} == {"pricing"}
    assert json.loads(tools[0].attributes[_RESULTS[schema]]) == {"result": "no results"}
    stops = observe_loopguard.decision_events("stop")
    assert "no_progress" in stops[0][1]["loopguard.detectors"]


def test_a_productive_agent_gets_no_stop(observe_loopguard, schema, hidden) -> None:
    count = metric_counter(observe_loopguard)
    search = CountingSearch()
    events = run(new_runner(productive_agent(search)))
    assert final_text(events) == "found after 3 searches"
    tools = _tool_spans(observe_loopguard)
    assert len(tools) == 3
    if schema == "1":  # hidden: ADK writes "{}" in place of the content, read as none
        assert (tools[0].attributes[_ARGUMENTS["1"]] == "{}") is hidden
    else:  # hidden: ADK writes no content attribute at all
        assert (_ARGUMENTS["2"] not in tools[0].attributes) is hidden
    assert observe_loopguard.decision_events("stop") == []
    (span,) = observe_loopguard.named("loopguard.run")
    assert span.attributes["loopguard.run.state"] == "completed"
    assert span.attributes["loopguard.run.tool_calls"] == 3
    assert count("loopguard.internal_errors") == 0


def test_a_looping_agent_whose_content_is_hidden_gets_no_false_stop_on_empty_objects(
    observe_loopguard, schema, monkeypatch
) -> None:
    """Content not recorded, the legacy schema's ``{}`` in place of arguments and results
    is no content: calls that all read ``{}`` are not the same call returning the same
    result (the guard sees nothing to compare; a productive run would be stopped else)."""
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
    monkeypatch.setenv("ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS", "false")
    search = CountingSearch()
    run(new_runner(looping_agent(search, turns=LOOPING_TURNS)))
    assert len(search.executions) == LOOPING_TURNS
    assert observe_loopguard.decision_events("stop") == []


def test_two_sessions_under_one_application_span_are_two_runs(observe_loopguard, schema) -> None:
    """A looping session, then a productive one, in one trace (the application's request
    span around both): each session is its own run, keyed by its session id; the second
    is not stopped by the first one's STOP and its tool calls are its own (a span
    without a conversation id goes to its nearest ancestor's run, not the trace's
    first; and ADK setting the id only when its spans end splits no session in two)."""
    count = metric_counter(observe_loopguard)
    with observe_loopguard.app_tracer().start_as_current_span("handle request"):
        looping = CountingSearch()
        run(new_runner(looping_agent(looping, turns=LOOPING_TURNS)), "first")
        productive = CountingSearch()
        events = run(new_runner(productive_agent(productive)), "second")
    assert final_text(events) == "found after 3 searches"
    first, second = observe_loopguard.named("loopguard.run")
    assert first.attributes["loopguard.run.id"] == "first"
    assert first.attributes["loopguard.run.state"] == "stopped"
    assert first.attributes["loopguard.run.tool_calls"] == LOOPING_TURNS
    assert second.attributes["loopguard.run.id"] == "second"
    assert second.attributes["loopguard.run.state"] == "completed"
    assert second.attributes["loopguard.run.tool_calls"] == 3
    assert second.attributes["loopguard.run.steps"] == 4
    assert count("loopguard.internal_errors") == 0


def test_one_invocation_is_one_run_recorded_on_its_root_span(observe_loopguard, schema) -> None:
    """ADK's root span of an invocation (``invoke_workflow <agent>``; in the legacy schema
    ``invocation``, with no attribute at all) is the run's agent span: the one
    ``loopguard.run`` of the invocation hangs under it, after all of its spans."""
    run(new_runner(productive_agent(CountingSearch())))
    root_name = "invocation" if schema == "1" else "invoke_workflow researcher"
    (root,) = observe_loopguard.named(root_name)
    assert root.parent is None
    (span,) = observe_loopguard.named("loopguard.run")
    assert span.parent.span_id == root.context.span_id
    assert span.attributes["loopguard.run.steps"] == 4
    assert span.attributes["loopguard.run.tool_calls"] == 3
