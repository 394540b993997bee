"""`opentelemetry-instrument` with every otel-loopguard wheel installed and no framework.

This is what a user who installs all the packages (or the wrong one for their framework)
runs. The program must run untouched (exit 0, its own output intact), the core's
loopguard processor must be loaded (its decision events reach the console exporter), and
every framework instrumentor must be skipped for want of its framework, none raising.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import Venv, explain
from distributions import INSTRUMENTATIONS

PROGRAM = Path(__file__).with_name("instrumented_program.py")

#: written into the venv's site-packages: with DISTS_SHOW_INSTRUMENTOR_LOADING set, the
#: auto-instrumentation's own debug log (which instrumentor it loaded or skipped, and why)
#: goes to stderr, the way a user debugging opentelemetry-instrument would turn it on
_LOADING_LOG = '''"""Shows opentelemetry-instrument's loading decisions on stderr (dists suite)."""
import logging
import os

if os.environ.get("DISTS_SHOW_INSTRUMENTOR_LOADING"):
    _logger = logging.getLogger("opentelemetry.instrumentation.auto_instrumentation")
    _logger.setLevel(logging.DEBUG)
    _handler = logging.StreamHandler()
    _handler.setFormatter(logging.Formatter("loading: %(levelname)s %(message)s"))
    _logger.addHandler(_handler)
'''


def run_program(installed: Venv, *flags: str) -> subprocess.CompletedProcess[str]:
    site_packages = next((installed.path / "lib").glob("python3*/site-packages"))
    if not (site_packages / "dists_loading_log.pth").exists():
        (site_packages / "dists_loading_log.py").write_text(_LOADING_LOG)
        (site_packages / "dists_loading_log.pth").write_text("import dists_loading_log\n")
    return installed.run(
        installed.bin("opentelemetry-instrument"),
        *flags,
        installed.python,
        PROGRAM,
        OTEL_TRACES_EXPORTER="console",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        OTEL_SERVICE_NAME="users-program",
        DISTS_SHOW_INSTRUMENTOR_LOADING="1",
    )


@pytest.fixture(scope="module")
def instrumented_run(installed: Venv) -> subprocess.CompletedProcess[str]:
    return run_program(installed)


def decision_events(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        event["attributes"]
        for span in spans
        for event in span.get("events", [])
        if event["name"] == "loopguard.decision"
    ]


def split_stdout(stdout: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The program's own JSON lines, and the spans the console exporter printed."""
    decoder = json.JSONDecoder()
    program, spans, index = [], [], 0
    while (start := stdout.find("{", index)) >= 0:
        value, index = decoder.raw_decode(stdout, start)
        (program if "program" in value else spans).append(value)
    return program, spans


def test_the_program_runs_untouched(instrumented_run: subprocess.CompletedProcess[str]) -> None:
    assert instrumented_run.returncode == 0, explain(instrumented_run)
    program, _ = split_stdout(instrumented_run.stdout)
    assert program == [{"program": "finished", "searches": 8, "last": "no results for call 7"}], (
        instrumented_run.stdout
    )


def test_the_loopguard_processor_is_loaded_and_decides(
    instrumented_run: subprocess.CompletedProcess[str],
) -> None:
    assert instrumented_run.returncode == 0, explain(instrumented_run)
    _, spans = split_stdout(instrumented_run.stdout)
    assert [s for s in spans if s["name"] == "execute_tool search"], "no span was exported"
    decisions = decision_events(spans)
    # the same search eight times: only the processor can have said so
    assert decisions, "no loopguard.decision event: the processor was not loaded"
    assert any("repetition" in d.get("loopguard.detectors", ()) for d in decisions), decisions
    assert [s for s in spans if s["name"] == "loopguard.run"]


def test_no_instrumentor_raises_and_each_is_skipped_for_its_missing_framework(
    instrumented_run: subprocess.CompletedProcess[str], installed: Venv
) -> None:
    stderr = instrumented_run.stderr
    assert instrumented_run.returncode == 0, explain(instrumented_run)
    assert "Traceback" not in stderr, stderr
    assert "loading: ERROR" not in stderr, stderr
    assert "Failed to auto initialize" not in stderr, stderr
    assert [p for p in INSTRUMENTATIONS if p in installed.projects]
    for project in INSTRUMENTATIONS:
        if project not in installed.projects:
            continue  # its Requires-Python excludes this Python
        (name,) = project.entry_points()["opentelemetry_instrumentor"]
        skipped = [
            line
            for line in stderr.splitlines()
            if line.startswith(f"loading: DEBUG {name} only instruments ")
            or line.startswith(f"loading: DEBUG Skipping instrumentation {name}:")
        ]
        assert skipped, f"{name} was not skipped for its missing framework:\n{stderr}"
        assert f"Instrumented {name}\n" not in stderr


def test_the_loopguard_flags_come_from_the_installed_variables_entry_point(
    installed: Venv,
) -> None:
    """The core's `opentelemetry_environment_variables` entry point makes each
    OTEL_LOOPGUARD_* variable a flag; `--loopguard_enabled false` must reach the processor."""
    done = installed.run(installed.bin("opentelemetry-instrument"), "--help")
    assert done.returncode == 0, explain(done)
    for flag in ("--loopguard_enabled", "--loopguard_mode", "--loopguard_capture_content"):
        assert flag in done.stdout
    done = run_program(installed, "--loopguard_enabled", "false")
    assert done.returncode == 0, explain(done)
    program, spans = split_stdout(done.stdout)
    assert program and program[0]["program"] == "finished"
    assert [s for s in spans if s["name"] == "execute_tool search"], "no span was exported"
    assert decision_events(spans) == []
