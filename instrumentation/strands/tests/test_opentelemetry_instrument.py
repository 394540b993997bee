"""The real ``opentelemetry-instrument`` loads the package through its entry point, next to
Strands' own GenAI spans on the same (global) tracer provider: Strands' ``execute_tool``
spans nest in our gate spans and its ``chat`` spans report the model turns, each once."""

from __future__ import annotations

from pathlib import Path

from otel_loopguard_testing import console_decisions, run_suite_app
from scripted_models import INPUT_TOKENS, OUTPUT_TOKENS

TESTS = Path(__file__).parent


def run_instrumented(scenario: str, mode: str) -> tuple[dict, list[dict]]:
    return run_suite_app(TESTS, scenario, mode=mode)


def ours(spans: list[dict], name: str) -> list[dict]:
    """Our spans called ``name``: Strands makes spans of the same names, which carry the
    ``gen_ai.event.start_time`` attribute ours never set; the console exporter prints no
    instrumentation scope."""
    return [
        s for s in spans if s["name"] == name and "gen_ai.event.start_time" not in s["attributes"]
    ]


def test_looping_agent_is_stopped_under_opentelemetry_instrument():
    outcome, spans = run_instrumented("agent", "enforce")

    assert outcome["interrupted"] is True
    assert "repetition" in outcome["detectors"]
    assert outcome["executions"] == 3  # Strands' own execute_tool spans are not counted again
    (agent,) = ours(spans, "invoke_agent researcher")
    assert agent["attributes"]["loopguard.run.state"] == "stopped"
    # Strands' chat spans report the turns and ours stay quiet: each counted once
    calls = outcome["model_calls"]
    assert len([s for s in spans if s["name"] == "chat"]) == calls
    assert agent["attributes"]["gen_ai.usage.input_tokens"] == calls * INPUT_TOKENS
    assert agent["attributes"]["gen_ai.usage.output_tokens"] == calls * OUTPUT_TOKENS
    tools = ours(spans, "execute_tool search")
    assert len(tools) == 3
    strands_tools = [s for s in spans if s["name"] == "execute_tool search" and s not in tools]
    assert {s["parent_id"] for s in strands_tools} == {s["context"]["span_id"] for s in tools}
    assert any(console_decisions(s, "stop") for s in tools)
    # Strands' cycle span the interrupt left is ended too (exported)
    cycles = [s for s in spans if s["name"] == "execute_event_loop_cycle"]
    assert len(cycles) == calls


def test_a_streamed_invocation_counts_each_turn_once_under_opentelemetry_instrument():
    outcome, spans = run_instrumented("streamed", "enforce")

    assert outcome == {"interrupted": False, "executions": 3, "model_calls": 4}
    (agent,) = ours(spans, "invoke_agent researcher")
    assert agent["attributes"]["loopguard.run.state"] == "completed"
    assert agent["attributes"]["gen_ai.usage.input_tokens"] == 4 * INPUT_TOKENS
    assert agent["attributes"]["gen_ai.usage.output_tokens"] == 4 * OUTPUT_TOKENS


def test_swarm_ping_pong_is_stopped_under_opentelemetry_instrument():
    outcome, spans = run_instrumented("swarm", "enforce")

    assert outcome["interrupted"] is True
    assert outcome["detectors"] == ["handoff_cycle"]
    (run,) = ours(spans, "invoke_agent desk")
    assert run["attributes"]["loopguard.run.state"] == "stopped"


def test_observe_mode_under_opentelemetry_instrument_changes_nothing():
    outcome, spans = run_instrumented("agent", "observe")

    assert outcome["interrupted"] is False
    assert outcome["executions"] == 7  # the model itself gave up
    actions = [
        e["attributes"]["loopguard.action"]
        for s in spans
        for e in s["events"]
        if e["name"] == "loopguard.decision"
    ]
    assert "stop" in actions  # recorded, not enforced
