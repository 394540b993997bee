"""A real Node.js agent (the OpenTelemetry JS SDK and its OTLP exporter from npm, installed
by scripts/test.sh into tests/serve/node_agent/) emitting GenAI-semconv tool spans in a
loop: the service STOPs it. Without node or the npm packages the test skips on a
developer's machine and fails under CI (CI=true), which must have them."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from otel_loopguard_testing import OTLPReceiver

from .service_process import ServeProcess, wait_for

AGENT = Path(__file__).with_name("node_agent")


def _node() -> str:
    node = shutil.which("node")
    installed = (AGENT / "node_modules" / "@opentelemetry" / "sdk-trace-base").is_dir()
    if node and installed:
        return node
    missing = "node" if not node else "the npm packages (cd tests/serve/node_agent && npm ci)"
    if os.environ.get("CI"):
        pytest.fail(f"{missing} missing under CI: scripts/test.sh installs them")
    pytest.skip(f"{missing} missing")


@pytest.fixture(scope="module")
def serve() -> Iterator[tuple[ServeProcess, OTLPReceiver]]:
    with OTLPReceiver() as backend:
        service = ServeProcess(backend.endpoint)
        yield service, backend
        service.stop()


def _run_node(serve: ServeProcess, service: str, run: str) -> tuple[str, str]:
    done = subprocess.run(
        [_node(), str(AGENT / "agent.js"), serve.http, service, run, "8"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=AGENT,
    )
    return done.stdout.strip().splitlines()[-1], done.stderr


def test_a_looping_node_agent_is_stopped(serve: tuple[ServeProcess, OTLPReceiver]) -> None:
    service_process, backend = serve
    trace_id, _ = _run_node(service_process, "node-agent", "loop")
    wait_for(
        lambda: service_process.metric(
            "loopguard_decisions_total", action="stop", service_name="node-agent"
        )
    )
    stops = wait_for(
        lambda: [
            span
            for span in backend.spans()
            if span.trace_id == trace_id and span.attributes.get("loopguard.action") == "stop"
        ]
    )
    # the run is keyed by the conversation id the baggage span processor put on every span
    assert stops[0].attributes["loopguard.run.id"].startswith("conv-node-agent-")


def test_a_healthy_node_agent_is_not(serve: tuple[ServeProcess, OTLPReceiver]) -> None:
    service_process, backend = serve
    before = service_process.metric("loopguard_serve_spans_total", outcome="accepted")
    trace_id, _ = _run_node(service_process, "node-healthy", "healthy")
    wait_for(
        lambda: (
            service_process.metric("loopguard_serve_spans_total", outcome="accepted") >= before + 9
        )
    )
    service_process.idle()
    assert service_process.metric("loopguard_decisions_total", service_name="node-healthy") == 0
    assert not [span for span in backend.spans() if span.trace_id == trace_id]
