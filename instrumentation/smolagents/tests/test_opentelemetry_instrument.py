"""The real ``opentelemetry-instrument`` loads the package through its entry point."""

from __future__ import annotations

from pathlib import Path

from otel_loopguard_testing import run_console_program

TESTS = Path(__file__).parent


def run_instrumented(mode: str) -> tuple[dict, list[dict]]:
    return run_console_program(
        TESTS / "apps" / "looping_agent.py",
        env={"PYTHONPATH": str(TESTS), "OTEL_LOOPGUARD_MODE": mode},
        timeout=180,
    )


def test_looping_agent_is_stopped_under_opentelemetry_instrument():
    outcome, spans = run_instrumented("enforce")

    assert outcome["interrupted"] is True
    assert outcome["action"] == "stop"
    assert 1 <= outcome["executions"] <= 4
    agent = next(s for s in spans if s["name"] == "invoke_agent ToolCallingAgent")
    assert agent["attributes"]["loopguard.run.state"] == "stopped"
    tools = [s for s in spans if s["name"] == "execute_tool search"]
    assert all(s["parent_id"] == agent["context"]["span_id"] for s in tools)
    decisions = [e for s in tools for e in s["events"] if e["name"] == "loopguard.decision"]
    assert any(e["attributes"]["loopguard.action"] == "stop" for e in decisions)


def test_observe_mode_under_opentelemetry_instrument_changes_nothing():
    outcome, spans = run_instrumented("observe")

    assert outcome["interrupted"] is False
    assert outcome["executions"] == 10
    agent = next(s for s in spans if s["name"] == "invoke_agent ToolCallingAgent")
    assert agent["attributes"]["loopguard.run.state"] == "max_steps"
    actions = [
        e["attributes"]["loopguard.action"]
        for s in spans
        for e in s["events"]
        if e["name"] == "loopguard.decision"
    ]
    assert "stop" in actions  # recorded, not enforced
