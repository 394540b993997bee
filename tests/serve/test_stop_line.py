"""``otel-loopguard serve`` says each STOP it decides in one line of its log (issue 30,
point 8): the service that sent the spans, the run, the agent, the tool, the detectors and
the reason, in the words of the in-process interrupt's line. A run's later calls repeat
its STOP and say nothing more; warnings and healthy runs say nothing at all.

A real service process, fed by agent processes over the real OTLP exporters."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from otel_loopguard_testing import OTLPReceiver

from .service_process import ServeProcess, run_agent, wait_for


@pytest.fixture(scope="module")
def serve() -> Iterator[ServeProcess]:
    with OTLPReceiver() as backend:
        service = ServeProcess(backend.endpoint)
        yield service
        service.stop()


def _stop_lines(serve: ServeProcess, text: str) -> list[str]:
    return [
        line
        for line in list(serve.stderr_lines)
        if "otel-loopguard serve: STOP" in line and text in line
    ]


def test_each_stop_is_one_line_with_service_run_and_reason(serve: ServeProcess) -> None:
    conversation = f"conv-{uuid.uuid4().hex}"
    # eight identical searches: a warning first, the STOP at the third, five calls after it
    run_agent(
        "http", serve.http, "loop", "checkout-agent", "--calls", "8", "--conversation", conversation
    )
    wait_for(lambda: serve.metric("loopguard_decisions_total", service_name="checkout-agent") >= 2)
    serve.idle()
    warned = serve.metric("loopguard_decisions_total", action="warn", service_name="checkout-agent")
    assert warned >= 1, "the run warned before its STOP: a decision that must say nothing"
    lines = wait_for(lambda: _stop_lines(serve, conversation))
    assert len(lines) == 1, lines
    # a second looping run, over gRPC: its own STOP, its own line
    other = f"conv-{uuid.uuid4().hex}"
    run_agent("grpc", serve.grpc, "loop", "checkout-agent", "--conversation", other)
    assert len(wait_for(lambda: _stop_lines(serve, other))) == 1
    serve.idle()
    assert len(_stop_lines(serve, conversation)) == len(_stop_lines(serve, other)) == 1
    line = lines[0]
    assert "service checkout-agent" in line
    assert f"run {conversation}" in line
    assert "agent researcher" in line and "tool search" in line
    assert "repetition" in line
    assert "search called 3 times with identical arguments" in line
    # docs/serve.md quotes this line (for a run conv-1), up to its "…"
    page = (Path(__file__).resolve().parents[2] / "docs" / "serve.md").read_text("utf-8")
    quoted = re.search(r"`(otel-loopguard serve:\s+STOP decided[^`]*)`", page)
    assert quoted, "docs/serve.md quotes no STOP line"
    said = " ".join(quoted.group(1).split()).split("…")[0].rstrip()
    assert line.startswith(said.replace("run conv-1", f"run {conversation}")), (said, line)


def test_a_run_with_no_stop_says_nothing(serve: ServeProcess) -> None:
    conversation = f"conv-{uuid.uuid4().hex}"
    run_agent(
        "grpc",
        serve.grpc,
        "healthy",
        "healthy-agent",
        "--calls",
        "12",
        "--conversation",
        conversation,
    )
    wait_for(lambda: serve.metric("loopguard_serve_spans_total", outcome="accepted") >= 13)
    serve.idle()
    assert not [line for line in serve.stderr_lines if conversation in line]
    assert not [line for line in serve.stderr_lines if "healthy-agent" in line]
