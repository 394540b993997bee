"""Bad input and too much of it, against a running ``otel-loopguard serve`` over real
sockets: each is answered with the right status and counted, and the service still judges
the next good request."""

from __future__ import annotations

import gzip
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from otel_loopguard_testing import OTLPReceiver

from .requests_helpers import GRPC_METHOD, grpc_export, looping_trace, merged, post
from .service_process import ServeProcess, wait_for

MAX_PENDING = 2_000


@pytest.fixture(scope="module")
def serve() -> Iterator[ServeProcess]:
    with OTLPReceiver() as backend:
        service = ServeProcess(backend.endpoint, "--max-pending-spans", str(MAX_PENDING))
        yield service
        service.stop()


def _requests(serve: ServeProcess, transport: str, outcome: str) -> float:
    return serve.metric("loopguard_serve_requests_total", transport=transport, outcome=outcome)


def _still_serving(serve: ServeProcess, service: str) -> None:
    """A good looping run sent now is judged: its STOP is counted."""
    _, request = looping_trace(6, service=service)
    assert post(serve.http, request.SerializeToString())[0] == 200
    wait_for(lambda: serve.metric("loopguard_decisions_total", action="stop", service_name=service))
    assert serve.health()[0] == 200


def test_malformed_protobuf_is_400_and_invalid_argument(serve: ServeProcess) -> None:
    garbage = b"\x0a\xff\xff\xff\xff\x0f not a protobuf"
    assert post(serve.http, garbage)[0] == 400
    assert grpc_export(serve.grpc, garbage) is grpc.StatusCode.INVALID_ARGUMENT
    assert post(serve.http, b"{not json", content_type="application/json")[0] == 400
    wait_for(lambda: _requests(serve, "http", "malformed") == 2)
    wait_for(lambda: _requests(serve, "grpc", "malformed") == 1)
    _still_serving(serve, "after-malformed")


def test_truncated_gzip_is_400(serve: ServeProcess) -> None:
    _, request = looping_trace(6)
    body = gzip.compress(request.SerializeToString())
    status, _ = post(serve.http, body[: len(body) // 2], {"Content-Encoding": "gzip"})
    assert status == 400
    # a gzip bomb: small on the wire, over the limit once inflated
    bomb = gzip.compress(b"\0" * (64 * 1024 * 1024))
    assert post(serve.http, bomb, {"Content-Encoding": "gzip"})[0] == 413
    _still_serving(serve, "after-gzip")


def test_a_100_mb_body_is_413_and_resource_exhausted(serve: ServeProcess) -> None:
    huge = b"\0" * (100 * 1024 * 1024)
    status, _ = post(serve.http, huge)
    assert status == 413
    assert grpc_export(serve.grpc, huge) is grpc.StatusCode.RESOURCE_EXHAUSTED
    wait_for(lambda: _requests(serve, "http", "too_large") >= 1)
    _still_serving(serve, "after-huge")


def test_a_flood_beyond_capacity_is_told_to_retry(serve: ServeProcess) -> None:
    # one request larger than all the room there is: refused at once, deterministically
    too_many = merged([looping_trace(199)[1] for _ in range(11)])  # 2,200 spans
    status, headers = post(serve.http, too_many.SerializeToString())
    assert status == 429 and headers["retry-after"] == "1"
    assert grpc_export(serve.grpc, too_many.SerializeToString()) is (
        grpc.StatusCode.RESOURCE_EXHAUSTED
    )
    # a flood: 48 requests of 1,800 spans at once from 8 senders, more than the engine
    # judges in the time it takes to send them
    body = merged([looping_trace(179)[1] for _ in range(10)]).SerializeToString()
    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(lambda _: post(serve.http, body)[0], range(48)))
    assert set(statuses) <= {200, 429}
    assert statuses.count(429) >= 1 and statuses.count(200) >= 1
    wait_for(lambda: serve.metric("loopguard_serve_spans_total", outcome="refused") >= 2_200 * 2)
    serve.idle()
    _still_serving(serve, "after-flood")


def test_spans_with_unusable_ids_are_a_partial_success(serve: ServeProcess) -> None:
    _, request = looping_trace(3, service="partly-broken")
    request.resource_spans[0].scope_spans[0].spans[0].trace_id = b"\x01\x02\x03\x04"
    body = request.SerializeToString()
    answer = urllib.request.urlopen(
        urllib.request.Request(
            f"{serve.http}/v1/traces", body, {"Content-Type": "application/x-protobuf"}
        ),
        timeout=30,
    )
    assert answer.status == 200
    response = ExportTraceServiceResponse.FromString(answer.read())
    assert response.partial_success.rejected_spans == 1
    with grpc.insecure_channel(serve.grpc) as channel:
        raw = channel.unary_unary(GRPC_METHOD)(body, timeout=30)
    assert ExportTraceServiceResponse.FromString(raw).partial_success.rejected_spans == 1
    wait_for(lambda: serve.metric("loopguard_serve_spans_total", outcome="rejected") == 2)
