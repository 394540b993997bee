"""The real ``opentelemetry-instrument`` loads the package through its entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).parent


def test_looping_crew_is_stopped_under_opentelemetry_instrument():
    env = {
        **os.environ,
        "PYTHONPATH": str(TESTS),
        "OTEL_TRACES_EXPORTER": "console",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "OTEL_LOOPGUARD_MODE": "enforce",
        # set before the interpreter starts: the instrumentor imports crewai at startup,
        # before the program's first line, and crewai reads these on import
        "CREWAI_DISABLE_TELEMETRY": "true",
        "CREWAI_TRACING_ENABLED": "false",
    }
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "opentelemetry-instrument"),
            sys.executable,
            str(TESTS / "apps" / "looping_crew.py"),
            "native",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=200,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    outcome = json.loads(done.stderr.strip().splitlines()[-1])
    assert outcome["interrupted"] is True
    assert 1 <= outcome["executions"] <= 4
    decoder, spans, index = json.JSONDecoder(), [], 0
    while (start := done.stdout.find("{", index)) >= 0:  # one JSON object per span
        span, index = decoder.raw_decode(done.stdout, start)
        spans.append(span)
    agent = next(s for s in spans if s["name"] == "invoke_agent researcher")
    assert agent["attributes"]["loopguard.run.state"] == "stopped"
    tools = [s for s in spans if s["name"] == "execute_tool search"]
    assert tools and all(s["parent_id"] == agent["context"]["span_id"] for s in tools)
