"""The real ``opentelemetry-instrument`` loads the package through its entry point."""

from __future__ import annotations

from pathlib import Path

from otel_loopguard_testing import run_suite_app

TESTS = Path(__file__).parent


def test_looping_crew_is_stopped_under_opentelemetry_instrument():
    # set before the interpreter starts: the instrumentor imports crewai at startup,
    # before the program's first line, and crewai reads these on import
    crewai_off = {"CREWAI_DISABLE_TELEMETRY": "true", "CREWAI_TRACING_ENABLED": "false"}
    outcome, spans = run_suite_app(
        TESTS, "native", mode="enforce", app="looping_crew.py", env=crewai_off, timeout=200
    )
    assert outcome["interrupted"] is True
    assert 1 <= outcome["executions"] <= 4
    agent = next(s for s in spans if s["name"] == "invoke_agent researcher")
    assert agent["attributes"]["loopguard.run.state"] == "stopped"
    tools = [s for s in spans if s["name"] == "execute_tool search"]
    assert tools and all(s["parent_id"] == agent["context"]["span_id"] for s in tools)
