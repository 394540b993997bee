"""The viewing pipeline for real: the demo (enforce mode, every scenario) exports OTLP to the
built Collector running ``collector/otel-collector.yaml``, which sends the traces to a built
Jaeger v2 and to its trace file, and serves the metrics to a real Prometheus running
``collector/prometheus.yml``. What a user then sees: Jaeger's search by the tag
``loopguard.action=stop`` finds the four stopped runs, each with its agent span's
``loopguard.run.state``; ``otel-loopguard analyze`` on the Collector's trace file finds the
same STOPs (run, call, tool, span, detectors) as on the demo's own trace file; every
dashboard panel shows what the demo did. Every configuration is used as shipped, its
addresses rewritten (configs.py)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import test_prometheus_end_to_end as dashboards

from .binaries import under_ci
from .configs import COLLECTOR, collector_telemetry, rewritten
from .processes import free_port, wait_for
from .stack import Jaeger, start_collector, start_jaeger, start_prometheus

LOOPGUARD = (sys.executable, "-m", "otel_loopguard.cli")
DEMO_SERVICE = "otel-loopguard-demo"
#: a real framework's agent (the OpenAI SDK with our openai package) under
#: opentelemetry-instrument, exporting to the Collector
OPENAI_AGENT = Path(__file__).parent / "apps" / "openai_agent.py"
OPENAI_SERVICE = "openai-pricing-agent"
RUNS = "sum(loopguard_runs_total)"
#: the demo's stops (tests/viewing/test_prometheus_end_to_end.py says which)
STOPS = 4


@dataclass
class Stack:
    jaeger: Jaeger
    otlp_http: str
    trace_file: Path
    prometheus: str


@pytest.fixture
def stack(collector_binary: Path, jaeger_binary: Path, tmp_path: Path) -> Iterator[Stack]:
    if shutil.which("prometheus") is None:
        if under_ci():
            pytest.fail("CI needs Debian's prometheus (scripts/test.sh installs it)")
        pytest.skip("prometheus not installed (apt-get install prometheus)")
    with contextlib.ExitStack() as running:
        jaeger = start_jaeger(jaeger_binary, tmp_path)
        running.callback(jaeger.process.stop)
        grpc, http, metrics, health = (free_port() for _ in range(4))
        trace_file = tmp_path / "data" / "traces.jsonl"
        config = rewritten(
            "otel-collector.yaml",
            {
                ("receivers", "otlp", "protocols", "grpc", "endpoint"): f"127.0.0.1:{grpc}",
                ("receivers", "otlp", "protocols", "http", "endpoint"): f"127.0.0.1:{http}",
                ("exporters", "otlp/jaeger", "endpoint"): jaeger.otlp_grpc,
                ("exporters", "prometheus", "endpoint"): f"127.0.0.1:{metrics}",
                ("exporters", "file/traces", "path"): str(trace_file),
                ("extensions", "health_check", "endpoint"): f"127.0.0.1:{health}",
                ("service", "telemetry"): collector_telemetry(free_port()),
            },
            tmp_path,
        )
        trace_file.parent.mkdir()
        collector = start_collector(
            collector_binary, config, f"http://127.0.0.1:{health}/", tmp_path
        )
        running.callback(collector.stop)
        scrape = rewritten(
            "prometheus.yml",
            {
                ("scrape_configs", 0, "static_configs", 0, "targets"): [f"127.0.0.1:{metrics}"],
                ("rule_files",): [str(COLLECTOR / "loopguard-alerts.yml")],
            },
            tmp_path,
        )
        prometheus, base = start_prometheus(scrape, tmp_path)
        running.callback(prometheus.stop)
        # its first scrape comes a few seconds after it is ready: the demo's zero series
        # must be scraped before its first run
        wait_for(lambda: dashboards.api(base, "targets")["activeTargets"], 30, "prometheus targets")
        yield Stack(jaeger, f"http://127.0.0.1:{http}", trace_file, base)


def _analyze(path: Path) -> dict[str, tuple[Any, ...]]:
    """The STOPs ``otel-loopguard analyze`` finds in a trace file: run -> where and why."""
    done = subprocess.run(
        [*LOOPGUARD, "analyze", "--format", "json", "--no-progress", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 1), done.stderr
    stops = {}
    for run in json.loads(done.stdout)["runs"]:
        stop = run.get("first_stop")
        if stop:
            where = (stop["tool_call_index"], stop["tool"], stop["span_id"])
            stops[run["run_id"]] = (*where, tuple(stop["detectors"]), run["end_state"])
    return stops


def _tags(span: dict[str, Any]) -> dict[str, Any]:
    return {tag["key"]: tag["value"] for tag in span.get("tags", [])}


def test_the_demo_through_the_collector_shows_in_jaeger_analyze_and_prometheus(
    stack: Stack, tmp_path: Path
) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OTEL_LOOPGUARD_", "OTEL_EXPORTER_OTLP", "OTEL_SERVICE_NAME"))
    }
    env.update(OTEL_LOOPGUARD_MODE="enforce", OTEL_EXPORTER_OTLP_ENDPOINT=stack.otlp_http)
    own_trace = tmp_path / "demo-trace.json"
    # as docs/viewing.md runs it: the zero series before the runs, the runs over a few of
    # Prometheus' 5 s scrapes, the metrics exported after them
    demo = subprocess.run(
        [
            *LOOPGUARD,
            "demo",
            "--scenario",
            "all",
            "--pace",
            "1",
            "--warmup",
            "12",
            "--keep-exporting",
            "15",
            "--trace-file",
            str(own_trace),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert demo.returncode == 0, demo.stdout + demo.stderr

    # Jaeger: one tag filter finds the stopped runs; each trace's agent span ends stopped
    stopped = wait_for(
        lambda: (
            found
            if len(found := stack.jaeger.traces(DEMO_SERVICE, {"loopguard.action": "stop"}))
            >= STOPS
            else None
        ),
        60,
        "Jaeger's search by loopguard.action=stop",
    )
    assert len(stopped) == STOPS
    for trace in stopped:
        agents = [s for s in trace["spans"] if s["operationName"].startswith("invoke_agent")]
        states = {_tags(span).get("loopguard.run.state") for span in agents}
        assert "stopped" in states, [(s["operationName"], _tags(s)) for s in agents]
        deciding = [s for s in trace["spans"] if _tags(s).get("loopguard.action") == "stop"]
        assert any(s["operationName"].startswith("execute_tool") for s in deciding)
    healthy = stack.jaeger.traces(DEMO_SERVICE, {"loopguard.run.state": "completed"})
    assert healthy and not {t["traceID"] for t in healthy} & {t["traceID"] for t in stopped}

    # analyze: the Collector's file replays to the STOPs of the demo's own trace file
    expected = _analyze(own_trace)
    assert expected, "analyze found no STOP in the demo's own trace file"
    assert wait_for(
        lambda: _analyze(stack.trace_file) == expected if stack.trace_file.exists() else False,
        30,
        "the Collector's trace file replaying to the demo's STOPs",
    )

    # Prometheus, scraping the Collector: every dashboard panel shows what the demo did
    def runs() -> float:
        return sum(dashboards.finite_values(dashboards.query(stack.prometheus, RUNS)))

    wait_for(lambda: runs() >= 6, 60, "the demo's six runs in Prometheus")
    dashboards.assert_panels_show_the_demo(stack.prometheus, settle=45)


def test_a_real_openai_agent_through_the_collector_is_found_stopped_in_jaeger(
    stack: Stack,
) -> None:
    """Not the demo: an application over the real OpenAI SDK, enabled by
    ``opentelemetry-instrument`` alone (the ``loopguard`` and ``loopguard_openai``
    instrumentors), its spans sent to the Collector with the SDK's own OTLP exporter."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PYTHONPATH"))}
    env.update(
        OTEL_SERVICE_NAME=OPENAI_SERVICE,
        OTEL_LOOPGUARD_MODE="enforce",
        OTEL_TRACES_EXPORTER="otlp",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
        OTEL_EXPORTER_OTLP_ENDPOINT=stack.otlp_http,
    )
    instrument = Path(sys.executable).with_name("opentelemetry-instrument")
    done = subprocess.run(
        [str(instrument), sys.executable, str(OPENAI_AGENT)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    outcome = json.loads(done.stderr.strip().splitlines()[-1])
    assert outcome["interrupted"], outcome
    assert outcome["searches"] < 8  # stopped before the agent's eight turns

    def whole() -> list[dict[str, Any]] | None:
        """The stopped run's traces once Jaeger holds their last spans too (the last export
        can reach it a moment after the tagged span)."""
        found = stack.jaeger.traces(OPENAI_SERVICE, {"loopguard.action": "stop"})
        spans = [span["operationName"] for trace in found for span in trace["spans"]]
        chats = sum(name.startswith("chat") for name in spans)
        agent = any(name.startswith("invoke_agent") for name in spans)
        return found if found and agent and chats >= outcome["requests"] else None

    (trace,) = wait_for(whole, 60, "the OpenAI agent's stopped run in Jaeger")
    names = [span["operationName"] for span in trace["spans"]]
    # the OpenAI package's model spans and the loop's own, in one trace
    assert sum(name.startswith("chat") for name in names) == outcome["requests"], names
    assert sum(name.startswith("execute_tool") for name in names) >= outcome["searches"]
    agents = [s for s in trace["spans"] if s["operationName"].startswith("invoke_agent")]
    assert {_tags(span).get("loopguard.run.state") for span in agents} == {"stopped"}
    deciding = [s for s in trace["spans"] if _tags(s).get("loopguard.action") == "stop"]
    assert deciding, "no span of the run carries loopguard.action=stop"
