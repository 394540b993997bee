"""Our core alone beside OpenInference's Google ADK instrumentation, observe mode: their spans
(``invocation [<app>]`` around ``agent_run [<agent>]``, an LLM span per model call, a TOOL
span ``execute_tool <tool>`` per tool call, content recorded) are all the guard sees."""

from __future__ import annotations

import json

from adk_agents import LOOPING_TURNS, looping_start
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.compat_checks import assert_loop_observed, openinference_spans
from scripted_models import CountingSearch, final_text, new_runner, productive_agent, run


def test_a_looping_agent_is_stopped_within_the_fourth_call(observe_loopguard) -> None:
    events = assert_loop_observed(
        observe_loopguard, looping_start(LOOPING_TURNS), executions=LOOPING_TURNS
    )
    assert final_text(events) == "gave up"  # observe mode: the run went on to its end
    tools = openinference_spans(observe_loopguard, "TOOL")
    assert len(tools) == LOOPING_TURNS
    assert all(s.attributes["input.value"] == '{"query": "pricing"}' for s in tools)


def test_a_loop_whose_results_differ_only_by_the_response_id_is_seen_as_unchanged(
    observe_loopguard,
) -> None:
    """Their TOOL span's ``output.value`` is ADK's whole function response, its ``id`` new
    with every call: unwrapped to ``response``, the results are one unchanged result, and
    the STOP is no progress (not a warning on repeated calls alone)."""
    looping_start(LOOPING_TURNS)()[0]()
    outputs = [
        json.loads(s.attributes["output.value"])
        for s in openinference_spans(observe_loopguard, "TOOL")
    ]
    assert len({o["id"] for o in outputs}) == LOOPING_TURNS  # every id differs
    assert {json.dumps(o["response"]) for o in outputs} == {'{"result": "no results"}'}
    stops = observe_loopguard.decision_events("stop")
    assert stops
    assert "no_progress" in stops[0][1]["loopguard.detectors"]


def test_a_productive_agent_gets_no_stop(observe_loopguard) -> None:
    count = metric_counter(observe_loopguard)
    search = CountingSearch()
    events = run(new_runner(productive_agent(search)))
    assert final_text(events) == "found after 3 searches"
    assert len(openinference_spans(observe_loopguard, "TOOL")) == 3
    assert observe_loopguard.decision_events("stop") == []
    assert count("loopguard.internal_errors") == 0
