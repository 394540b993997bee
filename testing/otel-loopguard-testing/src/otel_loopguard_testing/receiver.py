"""An OTLP/HTTP trace receiver on a loopback port, and the spans it received decoded."""

from __future__ import annotations

import gzip
import threading
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


@dataclass
class ReceivedSpan:
    """One span as it arrived over OTLP, decoded to plain Python values."""

    name: str
    span_id: str
    parent_span_id: str
    trace_id: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    status_code: int  # OTLP: 0 unset, 1 ok, 2 error
    scope: str = ""  # the instrumentation scope (tracer) name
    resource: dict[str, Any] = field(default_factory=dict)

    def event(self, name: str) -> dict[str, Any] | None:
        for event_name, attributes in self.events:
            if event_name == name:
                return attributes
        return None


def _any_value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _any_value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind)


def _attributes(pairs: Any) -> dict[str, Any]:
    return {kv.key: _any_value(kv.value) for kv in pairs}


class OTLPReceiver:
    """An OTLP/HTTP protobuf trace receiver on 127.0.0.1, run in a thread (``with`` block).

    ``bodies`` keeps every request body as the exporter sent it (compressed or not, any
    path), ``requests`` each trace export decoded with the official protobuf class (after the
    ``Content-Encoding`` the exporter used), :meth:`spans` their spans as plain values."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.requests: list[ExportTraceServiceRequest] = []
        self._spans: list[ReceivedSpan] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                receiver._store(self.path, self.headers.get("Content-Encoding", ""), body)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def server_address(self) -> tuple[str, int]:
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    @property
    def endpoint(self) -> str:
        host, port = self.server_address
        return f"http://{host}:{port}"

    def __enter__(self) -> OTLPReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _store(self, path: str, encoding: str, body: bytes) -> None:
        with self._lock:
            self.bodies.append(body)
        if encoding == "gzip":
            body = gzip.decompress(body)
        elif encoding == "deflate":
            body = zlib.decompress(body)
        if path.rstrip("/") != "/v1/traces":
            return
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        decoded = []
        for resource_spans in request.resource_spans:
            resource = _attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    decoded.append(
                        ReceivedSpan(
                            name=span.name,
                            span_id=span.span_id.hex(),
                            parent_span_id=span.parent_span_id.hex(),
                            trace_id=span.trace_id.hex(),
                            attributes=_attributes(span.attributes),
                            events=[(e.name, _attributes(e.attributes)) for e in span.events],
                            status_code=span.status.code,
                            scope=scope_spans.scope.name,
                            resource=resource,
                        )
                    )
        with self._lock:
            self.requests.append(request)
            self._spans.extend(decoded)

    def spans(self) -> list[ReceivedSpan]:
        with self._lock:
            return list(self._spans)


def received_decisions(spans: list[ReceivedSpan], action: str) -> list[dict[str, Any]]:
    """The ``loopguard.decision`` events with ``loopguard.action == action`` among ``spans``."""
    return [
        attributes
        for span in spans
        for name, attributes in span.events
        if name == "loopguard.decision" and attributes.get("loopguard.action") == action
    ]
