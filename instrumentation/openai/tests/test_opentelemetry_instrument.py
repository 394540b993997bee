"""The real ``opentelemetry-instrument`` loads the package through its entry point."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parent


def console_spans(stdout: str) -> list[dict]:
    """The console exporter prints one JSON object per span, back to back."""
    decoder = json.JSONDecoder()
    spans, index = [], 0
    while True:
        start = stdout.find("{", index)
        if start < 0:
            return spans
        span, index = decoder.raw_decode(stdout, start)
        spans.append(span)


def test_budget_enforced_under_opentelemetry_instrument():
    executable = shutil.which("opentelemetry-instrument", path=str(Path(sys.executable).parent))
    if executable is None:
        pytest.fail("opentelemetry-instrument is not installed next to this Python")
    env = {
        **os.environ,
        "PYTHONPATH": str(TESTS),
        "OTEL_TRACES_EXPORTER": "console",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "OTEL_SERVICE_NAME": "budget-agent",
        "OTEL_LOOPGUARD_MODE": "enforce",
        "OTEL_LOOPGUARD_TOKEN_BUDGET": "45",
    }
    done = subprocess.run(
        [executable, sys.executable, str(TESTS / "apps" / "budget_agent.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    outcome = json.loads(done.stderr.strip().splitlines()[-1])
    assert outcome == {"interrupted": True, "detectors": ["budget"], "requests": 2}
    spans = console_spans(done.stdout)
    chats = [span for span in spans if span["name"] == "chat gpt-test"]
    assert len(chats) == 3  # two answered, the third vetoed before it was sent
    assert chats[-1]["attributes"]["error.type"] == "LoopGuardInterrupt"
    agent = next(span for span in spans if span["name"] == "invoke_agent assistant")
    assert agent["attributes"]["loopguard.run.state"] == "budget_exceeded"
