"""`otel-loopguard demo`: README's first command shows a loop being stopped.

The demo runs as a user runs it, as a subprocess of the installed console script; its
trace file is read back as the OTLP JSON it claims to be.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def run_demo(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, Any]:
    trace_file = tmp_path / "trace.json"
    environment = dict(os.environ)
    for name in list(environment):
        if name.startswith(("OTEL_LOOPGUARD_", "OTEL_EXPORTER_OTLP")):
            del environment[name]
    environment.update(env or {})
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "otel_loopguard.cli",
            "demo",
            "--trace-file",
            str(trace_file),
            *args,
        ],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
        cwd=tmp_path,
    )
    trace = json.loads(trace_file.read_text()) if trace_file.exists() else None
    return result.returncode, result.stdout + result.stderr, trace


def spans(trace: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for rs in trace["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]


def any_value(value: dict[str, Any]) -> Any:
    if "arrayValue" in value:
        return [any_value(v) for v in value["arrayValue"].get("values", [])]
    return next(iter(value.values()), None)


def attrs(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {item["key"]: any_value(item["value"]) for item in items or []}


def tool_executions(trace: dict[str, Any], tool: str) -> list[dict[str, Any]]:
    return [s for s in spans(trace) if s["name"] == f"execute_tool {tool}"]


def decision_events(trace: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        attrs(event.get("attributes", []))
        for span in spans(trace)
        for event in span.get("events", [])
        if event["name"] == "loopguard.decision"
    ]


def test_default_demo_stops_the_stuck_agent_and_writes_its_trace(tmp_path: Path) -> None:
    code, output, trace = run_demo(tmp_path)
    assert code == 0, output
    assert "LoopGuardInterrupt" in output
    assert "saved:" in output
    assert trace is not None
    searches = tool_executions(trace, "search_kb")
    # stopped long before the script's 30 turns
    assert 3 <= len(searches) < 10
    stops = [d for d in decision_events(trace) if d["loopguard.action"] == "stop"]
    assert stops and stops[0]["loopguard.detectors"]
    agent = next(s for s in spans(trace) if s["name"].startswith("invoke_agent"))
    assert attrs(agent["attributes"])["loopguard.run.state"] == "stopped"


def test_observe_mode_records_the_stop_but_lets_the_run_finish(tmp_path: Path) -> None:
    code, output, trace = run_demo(tmp_path, "--mode", "observe")
    assert code == 0, output
    assert "LoopGuardInterrupt" not in output
    assert len(tool_executions(trace, "search_kb")) == 30
    assert any(d["loopguard.action"] == "stop" for d in decision_events(trace))


def test_healthy_run_is_left_alone(tmp_path: Path) -> None:
    code, output, trace = run_demo(tmp_path, "--scenario", "healthy")
    assert code == 0, output
    assert "completed untouched" in output
    assert not any(d["loopguard.action"] == "stop" for d in decision_events(trace))
    agent = next(s for s in spans(trace) if s["name"].startswith("invoke_agent"))
    assert attrs(agent["attributes"])["loopguard.run.state"] == "completed"


def test_every_scenario_ends_as_its_story_says(tmp_path: Path) -> None:
    code, output, trace = run_demo(tmp_path, "--scenario", "all")
    assert code == 0, output
    states = sorted(
        (attrs(s["attributes"])["gen_ai.agent.name"], attrs(s["attributes"])["loopguard.run.state"])
        for s in spans(trace)
        if s["name"].startswith("invoke_agent")
    )
    assert states == [
        ("coding-agent", "completed"),  # nudge-heeded
        ("coding-agent", "stopped"),  # nudge-ignored
        ("order-agent", "stopped"),
        ("support-agent", "completed"),  # healthy
        ("support-agent", "stopped"),  # stuck-search
        ("triage-agent", "stopped"),  # ping-pong
    ]
    stop_detectors = {
        detector
        for d in decision_events(trace)
        if d["loopguard.action"] == "stop"
        for detector in d["loopguard.detectors"]
    }
    assert {"permanent_failure", "handoff_cycle"} <= stop_detectors
    # a 404 retried: stopped at the second failure, the third fetch never ran
    assert len(tool_executions(trace, "fetch_order")) <= 3


def test_a_nudge_that_works_beside_one_that_is_stopped(tmp_path: Path) -> None:
    """enforce mode: the shell hint reaches the model's next request; the model that acts on
    it completes, the one that ignores it is stopped with "the nudge did not help"."""
    code, output, trace = run_demo(tmp_path, "--scenario", "nudge-heeded")
    assert code == 0, output
    assert "recovered after the nudge" in output
    assert "pip install requests" in output and "LoopGuardInterrupt" not in output
    agent = next(s for s in spans(trace) if s["name"].startswith("invoke_agent"))
    assert attrs(agent["attributes"])["loopguard.run.state"] == "completed"
    (replan,) = [d for d in decision_events(trace) if d["loopguard.action"] == "replan"]
    assert replan["loopguard.recommendation.delivery"] == "queued"
    delivered = [
        attrs(e.get("attributes", []))
        for s in spans(trace)
        for e in s.get("events", [])
        if e["name"] == "loopguard.recommendation.delivered"
    ]
    assert [d["loopguard.detectors"] for d in delivered] == [["shell_failure"]]

    code, output, trace = run_demo(tmp_path, "--scenario", "nudge-ignored")
    assert code == 0, output
    assert "LoopGuardInterrupt" in output and "the nudge did not help" in output
    (stop,) = [d for d in decision_events(trace) if d["loopguard.action"] == "stop"]
    assert stop["loopguard.detectors"] == ["shell_failure"]
    assert len(tool_executions(trace, "bash")) == 4  # 2 failures, the hint, 2 more: stopped

    code, output, trace = run_demo(tmp_path, "--scenario", "nudge-heeded", "--mode", "observe")
    assert "nudge:" not in output  # observe mode never changes a request
    assert len(tool_executions(trace, "bash")) == 12


def test_tool_arguments_never_leave_the_process_without_content_capture(tmp_path: Path) -> None:
    """Arguments and results stay home; signatures (hashes) travel, so the trace replays.

    Exception messages are recorded as OpenTelemetry always does (the 404 text is on the
    failing span's ``exception`` event), so the failing tool's argument is not checked here.
    """
    code, _, trace = run_demo(tmp_path, "--scenario", "all")
    assert code == 0
    text = json.dumps(trace)
    for secret in ("export invoices csv", "no results", "refund-B-2210", "B-2210", "pending"):
        assert secret not in text
    searches = tool_executions(trace, "search_kb")
    assert all("loopguard.tool.call.signature" in attrs(s["attributes"]) for s in searches)


def test_content_capture_exports_arguments_and_results(tmp_path: Path) -> None:
    code, _, trace = run_demo(
        tmp_path, "--scenario", "healthy", env={"OTEL_LOOPGUARD_CAPTURE_CONTENT": "true"}
    )
    assert code == 0
    first = attrs(tool_executions(trace, "search_kb")[0]["attributes"])
    assert "refund policy" in first["gen_ai.tool.call.arguments"]
    assert "30 days" in first["gen_ai.tool.call.result"]


def test_the_demo_trace_replays_to_the_same_stop(tmp_path: Path) -> None:
    code, output, _ = run_demo(tmp_path)
    assert code == 0, output
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "otel_loopguard.cli",
            "analyze",
            "--format",
            "json",
            str(tmp_path / "trace.json"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1, result.stderr  # a run reached stop
    report = json.loads(result.stdout)
    stopped = [run for run in report["runs"] if run["first_stop"] is not None]
    assert len(stopped) == 1
    assert stopped[0]["agent"] == "support-agent"


# --- OTLP export: only what got through is claimed ---------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def timed_demo(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[float, str]:
    started = time.monotonic()
    code, output, trace = run_demo(tmp_path, *args, env=env)
    elapsed = time.monotonic() - started
    assert code == 0, output
    assert trace is not None  # the trace file is written whatever happens to the export
    return elapsed, output


def test_an_unreachable_endpoint_costs_no_time_and_is_said_once(tmp_path: Path) -> None:
    """The viewing stack is down: the demo runs as fast as without it, says so once, and
    claims no export (it used to retry for 30 s, print twenty errors, then claim it)."""
    endpoint = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    normal, _ = timed_demo(tmp_path)
    elapsed, output = timed_demo(tmp_path, env={"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint})
    assert elapsed < normal + 5, (elapsed, normal)  # it used to take 30 s more
    about_it = [line for line in output.splitlines() if endpoint in line]
    assert len(about_it) == 1, output
    assert "could not reach" in about_it[0]
    assert "exported to" not in output
    assert "Traceback" not in output and "retrying" not in output
    assert "LoopGuardInterrupt" in output  # the demo itself ran as usual


class Receiver(http.server.BaseHTTPRequestHandler):
    """An OTLP/HTTP endpoint that answers ``status`` and keeps what it was sent."""

    status = 200
    posts: list[tuple[float, str, bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).posts.append((time.monotonic(), self.path, body))
        self.send_response(type(self).status)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[str, type[Receiver]]]:
    handler = type("TestReceiver", (Receiver,), {"status": 200, "posts": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


def test_a_listening_endpoint_gets_spans_and_metrics_and_the_demo_says_so(
    tmp_path: Path, receiver: tuple[str, type[Receiver]]
) -> None:
    endpoint, handler = receiver
    _, output = timed_demo(tmp_path, env={"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint})
    paths = {path for _, path, _ in handler.posts}
    assert {"/v1/traces", "/v1/metrics"} <= paths
    assert f"spans and metrics exported to {endpoint}" in output
    assert "could not reach" not in output


def test_failed_exports_are_said_once_and_never_claimed(
    tmp_path: Path, receiver: tuple[str, type[Receiver]]
) -> None:
    endpoint, handler = receiver
    handler.status = 400  # something listens, but it is not taking OTLP
    _, output = timed_demo(tmp_path, env={"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint})
    assert handler.posts
    about_it = [line for line in output.splitlines() if endpoint in line]
    assert len(about_it) == 1 and "export failed" in about_it[0], output
    assert "exported to" not in output and "Traceback" not in output


def test_warmup_and_keep_exporting_spread_the_metrics_over_time(
    tmp_path: Path, receiver: tuple[str, type[Receiver]]
) -> None:
    """What the viewing path runs: the collector hears the zero series before the agents
    start, the counters as they rise, and the final values for a while after the runs,
    so Prometheus' rate() and increase() panels have two samples around each change."""
    endpoint, handler = receiver
    started = time.monotonic()
    _, output = timed_demo(
        tmp_path,
        "--warmup",
        "1",
        "--keep-exporting",
        "3",
        env={"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint},
    )
    metrics = [(at - started, body) for at, path, body in handler.posts if path == "/v1/metrics"]
    # warmup: runs' zero series exported before any decision exists
    assert b"loopguard.runs" in metrics[0][1] and b"loopguard.decisions" not in metrics[0][1]
    assert any(b"loopguard.decisions" in body for _, body in metrics)
    # after the agents: at least one periodic export (every 2 s) and the final one
    after_runs = [body for _, body in metrics if b"loopguard.decisions" in body]
    assert len(after_runs) >= 2, [round(at, 1) for at, _ in metrics]
    assert "exporting metrics to" in output
    assert f"spans and metrics exported to {endpoint}" in output


def test_observe_mode_says_what_the_stop_would_have_saved(tmp_path: Path) -> None:
    """The same STOP point in both modes: observe reports what enforce saved."""
    saved = re.compile(r"saved (\d+) calls / ([\d,]+) tokens")
    _, enforced, _ = run_demo(tmp_path, "--scenario", "all")
    code, observed, _ = run_demo(tmp_path, "--scenario", "all", "--mode", "observe")
    assert code == 0, observed
    assert "enforce would have saved" in observed
    in_enforce, in_observe = saved.findall(enforced), saved.findall(observed)
    # nudge-ignored stops only after a delivered nudge: observe mode delivers none
    assert len(in_enforce) == 4 and in_observe == in_enforce[:3]
    assert "call(s)" not in enforced


def test_a_mode_written_in_any_case_is_read_and_a_bad_one_is_said_once_truthfully(
    tmp_path: Path,
) -> None:
    """``OTEL_LOOPGUARD_MODE=" Observe "`` is observe; a value that is no mode is one
    warning that says the mode the demo really uses (never "observe" and then enforcing)."""
    code, output, trace = run_demo(tmp_path, env={"OTEL_LOOPGUARD_MODE": " Observe "})
    assert code == 0, output
    assert "(observe mode)" in output and "ignoring" not in output
    assert len(tool_executions(trace, "search_kb")) == 30

    code, output, trace = run_demo(tmp_path, "--mode", "OBSERVE")
    assert code == 0, output
    assert len(tool_executions(trace, "search_kb")) == 30

    code, output, trace = run_demo(tmp_path, env={"OTEL_LOOPGUARD_MODE": "enforced"})
    assert code == 0, output
    warnings = [line for line in output.splitlines() if "'enforced'" in line]
    assert len(warnings) == 1, output
    assert "observe, enforce" in warnings[0] and "did you mean 'enforce'" in warnings[0]
    assert "enforce mode" in warnings[0] and "'observe'" not in warnings[0]
    assert "(enforce mode)" in output and "LoopGuardInterrupt" in output
