"""The real ``opentelemetry-instrument`` loads the package through its entry point."""

from __future__ import annotations

from pathlib import Path

from otel_loopguard_testing import console_actions, run_suite_app

TESTS = Path(__file__).parent


def run_instrumented(mode: str) -> tuple[dict, list[dict]]:
    return run_suite_app(TESTS, mode=mode)


def test_looping_agent_is_stopped_under_opentelemetry_instrument():
    outcome, spans = run_instrumented("enforce")

    assert outcome["interrupted"] is True
    assert outcome["action"] == "stop"
    assert 1 <= outcome["executions"] <= 4
    agent = next(s for s in spans if s["name"] == "invoke_agent ToolCallingAgent")
    assert agent["attributes"]["loopguard.run.state"] == "stopped"
    tools = [s for s in spans if s["name"] == "execute_tool search"]
    assert all(s["parent_id"] == agent["context"]["span_id"] for s in tools)
    assert "stop" in console_actions(tools)


def test_observe_mode_under_opentelemetry_instrument_changes_nothing():
    outcome, spans = run_instrumented("observe")

    assert outcome["interrupted"] is False
    assert outcome["executions"] == 10
    agent = next(s for s in spans if s["name"] == "invoke_agent ToolCallingAgent")
    assert agent["attributes"]["loopguard.run.state"] == "max_steps"
    assert "stop" in console_actions(spans)  # recorded, not enforced
