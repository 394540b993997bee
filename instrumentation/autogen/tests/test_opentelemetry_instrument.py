"""The real ``opentelemetry-instrument`` loads the package through its entry point, next to
autogen-core's own GenAI spans on the same (global) tracer provider."""

from __future__ import annotations

from pathlib import Path

from otel_loopguard_testing import console_decisions, run_console_program

TESTS = Path(__file__).parent


def run_instrumented(scenario: str, mode: str) -> tuple[dict, list[dict]]:
    return run_console_program(
        TESTS / "apps" / "looping_agent.py",
        scenario,
        env={"PYTHONPATH": str(TESTS), "OTEL_LOOPGUARD_MODE": mode},
        timeout=180,
    )


def ours(spans: list[dict], name: str) -> list[dict]:
    """Our spans called ``name``; autogen-core makes spans of the same names, marked
    ``gen_ai.system = autogen`` (the console exporter prints no instrumentation scope)."""
    return [
        s for s in spans if s["name"] == name and s["attributes"].get("gen_ai.system") != "autogen"
    ]


def test_looping_agent_is_stopped_under_opentelemetry_instrument():
    outcome, spans = run_instrumented("agent", "enforce")

    assert outcome["interrupted"] is True
    assert "repetition" in outcome["detectors"]
    assert outcome["executions"] == 3
    (agent,) = ours(spans, "invoke_agent researcher")
    assert agent["attributes"]["loopguard.run.state"] == "stopped"
    tools = ours(spans, "execute_tool search")
    assert len(tools) == 3  # autogen's own execute_tool spans inside them are not counted again
    # under autogen's own invoke_agent span, which is under ours: one trace, one run
    assert {s["context"]["trace_id"] for s in tools} == {agent["context"]["trace_id"]}
    assert any(console_decisions(s, "stop") for s in tools)


def test_swarm_ping_pong_is_stopped_under_opentelemetry_instrument():
    outcome, spans = run_instrumented("swarm", "enforce")

    assert outcome["interrupted"] is True
    assert outcome["detectors"] == ["handoff_cycle"]
    (team,) = ours(spans, "invoke_agent Swarm")
    assert team["attributes"]["loopguard.run.state"] == "stopped"


def test_observe_mode_under_opentelemetry_instrument_changes_nothing():
    outcome, spans = run_instrumented("agent", "observe")

    assert outcome["interrupted"] is False
    assert outcome["executions"] == 10  # autogen's own max_tool_iterations ended it
    actions = [
        e["attributes"]["loopguard.action"]
        for s in spans
        for e in s["events"]
        if e["name"] == "loopguard.decision"
    ]
    assert "stop" in actions  # recorded, not enforced
