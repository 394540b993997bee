"""Fixtures shared by the core's test folders."""

from __future__ import annotations

import gzip
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

# tests/dists/ is the `dists` suite (scripts/run_tests.py): it builds and installs every
# distribution in venvs of its own, so the core's suites leave it out
collect_ignore = ["dists"]


class _OTLPHandler(BaseHTTPRequestHandler):
    """OTLP/HTTP trace receiver: keeps each body as sent, and decodes it with the official
    protobuf class (after the Content-Encoding the exporter used)."""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.bodies.append(body)  # type: ignore[attr-defined]
        encoding = self.headers.get("Content-Encoding", "")
        if encoding == "gzip":
            body = gzip.decompress(body)
        elif encoding == "deflate":
            body = zlib.decompress(body)
        if self.path == "/v1/traces":
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            self.server.requests.append(request)  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[ThreadingHTTPServer]:
    """A real OTLP/HTTP receiver on a loopback port: ``.bodies`` (raw) and ``.requests``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _OTLPHandler)
    server.bodies = []  # type: ignore[attr-defined]
    server.requests = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
