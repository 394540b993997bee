"""``otel-loopguard demo`` ends with "replay it with: otel-loopguard analyze FILE": the replay
of the trace it wrote must find the runs the demo stopped, and leave the healthy one alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).with_name("otel-loopguard")


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory) -> dict:
    trace = tmp_path_factory.mktemp("demo") / "demo-trace.json"
    demo = subprocess.run(
        [
            str(SCRIPT),
            "demo",
            "--scenario",
            "all",
            "--mode",
            "observe",
            "--pace",
            "0",
            "--trace-file",
            str(trace),
        ],
        capture_output=True,
        timeout=300,
        check=True,
    )
    assert b"analyze" in demo.stdout
    result = subprocess.run(
        [str(SCRIPT), "analyze", "--format", "json", str(trace)],
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 1, result.stderr  # runs would have stopped
    return json.loads(result.stdout)


def _by_scenario(report: dict) -> dict[str, dict]:
    runs: dict[str, dict] = {}
    for run in report["runs"]:
        runs.setdefault(run["agent"], run)
    return runs


def test_replay_finds_the_stuck_search_and_the_permanent_failure(demo_report: dict) -> None:
    stopped = {run["agent"] for run in demo_report["runs"] if run["first_stop"]}
    assert {"support-agent", "order-agent"} <= stopped
    detectors = {
        d
        for run in demo_report["runs"]
        if run["first_stop"]
        for d in run["first_stop"]["detectors"]
    }
    assert {"repetition", "no_progress", "permanent_failure"} <= detectors
    healthy = [
        r for r in demo_report["runs"] if r["agent"] == "support-agent" and not r["first_stop"]
    ]
    assert healthy and healthy[0]["tool_calls"] == 5


def test_replay_finds_the_handoff_ping_pong(demo_report: dict) -> None:
    triage = _by_scenario(demo_report)["triage-agent"]
    assert triage["first_stop"] and "handoff_cycle" in triage["first_stop"]["detectors"]
