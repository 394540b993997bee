"""Run an unmodified program under the real ``opentelemetry-instrument`` and read its spans.

The SDK's console exporter prints one JSON object per span on stdout; the program reports
its own outcome as the last JSON line on stderr. Only ``OTEL_*`` variables the caller sets
reach the child (a developer's own OpenTelemetry settings must not change the test).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

INSTRUMENT = Path(sys.executable).parent / "opentelemetry-instrument"


def run_instrumented(
    program: Path,
    *program_args: str,
    flags: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    child_env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("OTEL_", "PYTHONPATH"))
    }
    child_env.update(
        OTEL_TRACES_EXPORTER="console",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        OTEL_SERVICE_NAME=program.stem,
    )
    child_env.update(env or {})
    command = [str(INSTRUMENT), *flags, sys.executable, str(program), *program_args]
    done = subprocess.run(command, env=child_env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    outcome = json.loads(done.stderr.strip().splitlines()[-1])
    return outcome, console_spans(done.stdout)


def console_spans(text: str) -> list[dict[str, Any]]:
    """The JSON objects the console exporter printed, one per span."""
    decoder = json.JSONDecoder()
    spans: list[dict[str, Any]] = []
    index = 0
    while True:
        start = text.find("{", index)
        if start < 0:
            return spans
        span, index = decoder.raw_decode(text, start)
        spans.append(span)


def decisions(span: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [
        event
        for event in span.get("events", [])
        if event["name"] == "loopguard.decision"
        and event["attributes"].get("loopguard.action") == action
    ]
