"""Programs run as a user runs them: under the real ``opentelemetry-instrument`` of the test's
venv, their spans sent to an :class:`~otel_loopguard_testing.receiver.OTLPReceiver` or printed by
the console exporter."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .receiver import OTLPReceiver


def printed_count(stdout: str, label: str) -> int:
    """The number a test script printed as ``LABEL <n>`` on a line of its own."""
    for line in stdout.splitlines():
        if line.startswith(label + " ") and line[len(label) + 1 :].isdigit():
            return int(line[len(label) + 1 :])
    raise AssertionError(f"the script printed no {label!r} line:\n{stdout}")


def run_under_opentelemetry_instrument(
    script: Path,
    receiver: OTLPReceiver | None = None,
    *,
    extra_args: tuple[str, ...] = (),
    script_args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run ``opentelemetry-instrument [extra_args] python script [script_args]`` from this
    test's venv, as a user would: the instrumentors are found through their entry points.

    Spans go to ``receiver`` over OTLP/HTTP, or, without one, to the console exporter on
    stdout (read them with :func:`console_spans`); metrics and logs are off. Only the
    ``OTEL_*`` variables given in ``env`` reach the child: a developer's own OpenTelemetry
    settings, pytest's and ``PYTHONPATH`` must not change the test.
    """
    bin_dir = Path(sys.executable).parent
    exporter = "otlp_proto_http" if receiver is not None else "console"
    command = [
        str(bin_dir / "opentelemetry-instrument"),
        "--traces_exporter",
        exporter,
        "--metrics_exporter",
        "none",
        "--logs_exporter",
        "none",
        *extra_args,
        str(bin_dir / "python"),
        str(script),
        *script_args,
    ]
    child_env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("OTEL_", "PYTEST_", "PYTHONPATH"))
    }
    child_env.update({"OTEL_SERVICE_NAME": script.stem, "PYTHONUNBUFFERED": "1"})
    if receiver is not None:
        child_env.update(
            {
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{receiver.endpoint}/v1/traces",
                "OTEL_BSP_SCHEDULE_DELAY": "100",
            }
        )
    child_env.update(env or {})
    return subprocess.run(
        command,
        cwd=script.parent,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@contextlib.contextmanager
def reported_outcome(executions: Callable[[], int]) -> Iterator[dict[str, Any]]:
    """In a test program: ``with reported_outcome(...) as outcome:`` runs the agent, then
    prints the outcome as the program's last JSON line on stderr (what
    :func:`program_outcome` reads): ``interrupted`` (and the STOP's ``action``) when a
    ``LoopGuardInterrupt`` reached the program, what the block put in it (its ``answer``),
    and ``executions()``, how many times the tool body really ran."""
    from otel_loopguard import LoopGuardInterrupt

    outcome: dict[str, Any] = {"interrupted": False, "answer": None}
    try:
        yield outcome
    except LoopGuardInterrupt as interrupt:
        outcome["interrupted"] = True
        outcome["action"] = interrupt.decision.action.value
    outcome["executions"] = executions()
    print(json.dumps(outcome), file=sys.stderr)


def program_outcome(completed: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The outcome a test program reports as the last JSON line on stderr; it must exit 0."""
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stderr.strip().splitlines()[-1])


def run_console_program(
    script: Path,
    *script_args: str,
    extra_args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """:func:`run_under_opentelemetry_instrument` with the console exporter: the program's
    outcome (:func:`program_outcome`) and the spans it exported (:func:`console_spans`)."""
    completed = run_under_opentelemetry_instrument(
        script, extra_args=extra_args, script_args=script_args, env=env, timeout=timeout
    )
    return program_outcome(completed), console_spans(completed.stdout)


def run_suite_app(
    tests: Path,
    *script_args: str,
    mode: str,
    app: str = "looping_agent.py",
    env: dict[str, str] | None = None,
    timeout: float = 180,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A suite's test program ``tests/apps/<app>`` under ``opentelemetry-instrument`` in
    ``mode`` (``OTEL_LOOPGUARD_MODE``), with ``tests`` on ``PYTHONPATH`` (for its scripted
    models) and ``env`` set too: :func:`run_console_program`'s outcome and spans."""
    return run_console_program(
        tests / "apps" / app,
        *script_args,
        env={"PYTHONPATH": str(tests), "OTEL_LOOPGUARD_MODE": mode, **(env or {})},
        timeout=timeout,
    )


def console_spans(text: str) -> list[dict[str, Any]]:
    """The JSON objects the SDK's console exporter printed, one per span, back to back."""
    decoder = json.JSONDecoder()
    spans: list[dict[str, Any]] = []
    index = 0
    while True:
        start = text.find("{", index)
        if start < 0:
            return spans
        span, index = decoder.raw_decode(text, start)
        spans.append(span)


def console_decisions(span: dict[str, Any], action: str) -> list[dict[str, Any]]:
    """The ``loopguard.decision`` events with ``loopguard.action == action`` on one console span."""
    return [
        event
        for event in span.get("events", [])
        if event["name"] == "loopguard.decision"
        and event["attributes"].get("loopguard.action") == action
    ]
