"""Raw OTLP requests for the robustness tests: spans built with the official protobuf
classes, sent over real sockets with the standard library's HTTP client and grpcio."""

from __future__ import annotations

import base64
import http.client
import json
import os
from urllib.parse import urlsplit

import grpc
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

GRPC_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def _kv(key: str, value: str) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(string_value=value))


def looping_trace(
    calls: int,
    service: str = "raw-agent",
    start_ns: int = 1_000_000_000,
    conversation: str | None = None,
    reads: bool = False,
) -> tuple[str, ExportTraceServiceRequest]:
    """One agent run of ``calls`` identical searches with identical empty answers (with
    ``reads``: ``read_file`` calls of distinct files, a read-only loop), root last (as an
    SDK exports it), every span carrying ``conversation`` when given; returns the trace id
    and the request."""
    trace_id = os.urandom(16)
    root_id = os.urandom(8)
    common = [_kv("gen_ai.conversation.id", conversation)] if conversation else []
    spans = []
    for index in range(calls):
        begin = start_ns + index * 1_000_000
        spans.append(
            Span(
                trace_id=trace_id,
                span_id=os.urandom(8),
                parent_span_id=root_id,
                name="execute_tool read_file" if reads else "execute_tool search",
                start_time_unix_nano=begin,
                end_time_unix_nano=begin + 500_000,
                attributes=[
                    _kv("gen_ai.operation.name", "execute_tool"),
                    _kv("gen_ai.tool.name", "read_file" if reads else "search"),
                    _kv(
                        "gen_ai.tool.call.arguments",
                        json.dumps({"path": f"f{index}.py"} if reads else {"query": "pricing"}),
                    ),
                    _kv("gen_ai.tool.call.result", f"contents {index}" if reads else "no results"),
                    *common,
                ],
            )
        )
    spans.append(
        Span(
            trace_id=trace_id,
            span_id=root_id,
            name="invoke_agent researcher",
            start_time_unix_nano=start_ns - 1,
            end_time_unix_nano=start_ns + calls * 1_000_000,
            attributes=[
                _kv("gen_ai.operation.name", "invoke_agent"),
                _kv("gen_ai.agent.name", "researcher"),
                *common,
            ],
        )
    )
    request = ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource(attributes=[_kv("service.name", service)]),
                scope_spans=[ScopeSpans(spans=spans)],
            )
        ]
    )
    return trace_id.hex(), request


def otlp_json(request: ExportTraceServiceRequest) -> dict:
    """The request in OTLP/JSON: protobuf's JSON mapping, but trace and span ids in hex (the
    OTLP/JSON rule) where the mapping writes bytes in base64."""
    document = json_format.MessageToDict(request)
    for block in document["resourceSpans"]:
        for scope in block["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return document


def merged(requests: list[ExportTraceServiceRequest]) -> ExportTraceServiceRequest:
    out = ExportTraceServiceRequest()
    for request in requests:
        out.resource_spans.extend(request.resource_spans)
    return out


def post(
    url: str,
    body: bytes,
    headers: dict[str, str] | None = None,
    content_type: str = "application/x-protobuf",
) -> tuple[int, dict[str, str]]:
    """POST ``body`` to ``url``/v1/traces; the status and headers (a server that answers
    before reading the whole body may close the socket under the rest of it)."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        connection.putrequest("POST", "/v1/traces")
        connection.putheader("Content-Type", content_type)
        connection.putheader("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            connection.putheader(key, value)
        connection.endheaders()
        try:
            view = memoryview(body)
            for offset in range(0, len(body), 1 << 20):
                connection.send(view[offset : offset + (1 << 20)])
        except (BrokenPipeError, ConnectionResetError):
            pass  # answered already: read the answer below
        answer = connection.getresponse()
        answer.read()
        return answer.status, {key.lower(): value for key, value in answer.getheaders()}
    finally:
        connection.close()


def grpc_export(
    target: str, body: bytes, metadata: tuple[tuple[str, str], ...] = ()
) -> grpc.StatusCode:
    """Call Export with a raw body; the status code it is answered with."""
    with grpc.insecure_channel(
        target, options=[("grpc.max_send_message_length", 256 * 1024 * 1024)]
    ) as channel:
        export = channel.unary_unary(GRPC_METHOD)
        try:
            export(body, timeout=60, metadata=metadata)
        except grpc.RpcError as error:
            return error.code()
        return grpc.StatusCode.OK
