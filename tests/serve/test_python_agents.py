"""Python agents in processes of their own export over the real OTLP exporters (gRPC and
HTTP) to a running ``otel-loopguard serve``: a looping run shows STOP in the Prometheus text
(labelled with the agent's ``service.name``) and as a ``loopguard.decision`` span in the
agent's own trace, received by an OTLP receiver in the test; a healthy run shows none."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from otel_loopguard_testing import OTLPReceiver

from .requests_helpers import looping_trace, otlp_json, post
from .service_process import ServeProcess, run_agent, wait_for


@pytest.fixture(scope="module")
def backend() -> Iterator[OTLPReceiver]:
    with OTLPReceiver() as receiver:
        yield receiver


@pytest.fixture(scope="module")
def serve(backend: OTLPReceiver) -> Iterator[ServeProcess]:
    service = ServeProcess(backend.endpoint)
    yield service
    service.stop()


def _decision_spans(backend: OTLPReceiver, trace_id: str, action: str) -> list:
    return [
        span
        for span in backend.spans()
        if span.name == "loopguard.decision"
        and span.trace_id == trace_id
        and span.attributes.get("loopguard.action") == action
    ]


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_a_looping_run_is_stopped_in_prometheus_and_in_its_trace(
    protocol: str, serve: ServeProcess, backend: OTLPReceiver
) -> None:
    service = f"looping-agent-{protocol}"
    endpoint = serve.grpc if protocol == "grpc" else serve.http
    # the exporters' gzip (gRPC: the runtime's message compression; HTTP: Content-Encoding)
    gzip = {"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}
    trace_id = run_agent(protocol, endpoint, "loop", service, env=gzip)

    wait_for(lambda: serve.metric("loopguard_decisions_total", action="stop", service_name=service))
    stops = wait_for(lambda: _decision_spans(backend, trace_id, "stop"))
    # one STOP for the run, on the tool span where it was decided, in the agent's trace
    assert len(stops) == 1
    stop = stops[0]
    assert stop.scope == "otel_loopguard"
    assert stop.attributes["gen_ai.tool.name"] == "search"
    assert "repetition" in stop.attributes["loopguard.detectors"]
    assert stop.parent_span_id and stop.event("loopguard.decision") is not None
    # arguments and results are not exported without content capture
    assert not any(key.startswith("loopguard.content") for key in stop.attributes)


def test_a_healthy_run_shows_no_decision(serve: ServeProcess, backend: OTLPReceiver) -> None:
    before = serve.metric("loopguard_serve_spans_total", outcome="accepted")
    trace_id = run_agent("http", serve.http, "healthy", "healthy-agent", "--calls", "12")
    wait_for(lambda: serve.metric("loopguard_serve_spans_total", outcome="accepted") >= before + 13)
    serve.idle()
    wait_for(lambda: serve.metric("loopguard_runs_total", state="completed") >= 1)
    assert serve.metric("loopguard_decisions_total", service_name="healthy-agent") == 0
    assert not [
        span
        for span in backend.spans()
        if span.trace_id == trace_id and span.name == "loopguard.decision"
    ]


def test_otlp_json_is_judged_too(serve: ServeProcess, backend: OTLPReceiver) -> None:
    trace_id, request = looping_trace(6, service="json-agent")
    body = json.dumps(otlp_json(request)).encode()
    assert post(serve.http, body, content_type="application/json")[0] == 200
    wait_for(
        lambda: serve.metric("loopguard_decisions_total", action="stop", service_name="json-agent")
    )
    assert wait_for(lambda: _decision_spans(backend, trace_id, "stop"))


def test_a_replan_is_exported_as_not_delivered(serve: ServeProcess, backend: OTLPReceiver) -> None:
    """The service sees spans after the fact: a read-only loop's nudge cannot reach the
    agent's model; its decision span and the recoveries metric say so."""
    trace_id, request = looping_trace(9, service="reading-agent", reads=True)
    assert post(serve.http, request.SerializeToString())[0] == 200
    (replan,) = wait_for(lambda: _decision_spans(backend, trace_id, "replan"))
    assert replan.attributes["loopguard.recommendation.delivery"] == "not_delivered"
    assert "Act on what you found" in replan.attributes["loopguard.recommendation"]
    wait_for(
        lambda: (
            serve.metric(
                "loopguard_recoveries_total", detector="read_only_loop", outcome="not_delivered"
            )
            == 1
        )
    )


def test_no_argument_or_result_in_the_log(serve: ServeProcess) -> None:
    """Last in this module: stops the service to read its whole log."""
    assert serve.stop() == 0
    log = "".join(serve.stderr_lines)
    assert "listening" in log and "stopped" in log
    for content in ("pricing", "no results", "found page"):
        assert content not in log
