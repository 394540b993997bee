"""The real ``opentelemetry-instrument`` loads the package through its entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).parent


def run_instrumented(mode: str) -> tuple[dict, list[dict]]:
    executable = Path(sys.executable).parent / "opentelemetry-instrument"
    env = {
        **os.environ,
        "PYTHONPATH": str(TESTS),
        "OTEL_TRACES_EXPORTER": "console",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "OTEL_LOOPGUARD_MODE": mode,
    }
    done = subprocess.run(
        [str(executable), sys.executable, str(TESTS / "apps" / "looping_agent.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    outcome = json.loads(done.stderr.strip().splitlines()[-1])
    decoder, spans, index = json.JSONDecoder(), [], 0
    while (start := done.stdout.find("{", index)) >= 0:  # one JSON object per span
        span, index = decoder.raw_decode(done.stdout, start)
        spans.append(span)
    return outcome, spans


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
