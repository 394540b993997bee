"""Real-OpenTelemetry test helpers for the instrumentation suites (see README.md here)."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor


class SpanLifecycle(SpanProcessor):
    """Records span starts and ends; the SDK calls ``on_end`` once per ``end()`` that counts."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.started: dict[int, str] = {}
        self.ended: Counter[int] = Counter()

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        with self._lock:
            self.started[span.context.span_id] = span.name

    def on_end(self, span: ReadableSpan) -> None:
        with self._lock:
            self.ended[span.context.span_id] += 1

    def open_spans(self) -> list[str]:
        with self._lock:
            return [name for sid, name in self.started.items() if self.ended[sid] == 0]

    def ended_more_than_once(self) -> list[str]:
        with self._lock:
            return [self.started.get(sid, "?") for sid, count in self.ended.items() if count > 1]


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
    """An OTLP/HTTP protobuf trace receiver on 127.0.0.1, run in a thread (``with`` block)."""

    def __init__(self) -> None:
        self._spans: list[ReceivedSpan] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path.rstrip("/") == "/v1/traces":
                    receiver._store(body)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> OTLPReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _store(self, body: bytes) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

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


def printed_count(stdout: str, label: str) -> int:
    """The number a test script printed as ``LABEL <n>`` on a line of its own."""
    for line in stdout.splitlines():
        if line.startswith(label + " ") and line[len(label) + 1 :].isdigit():
            return int(line[len(label) + 1 :])
    raise AssertionError(f"the script printed no {label!r} line:\n{stdout}")


def run_under_opentelemetry_instrument(
    script: Path,
    receiver: OTLPReceiver,
    *,
    extra_args: tuple[str, ...] = (),
    script_args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run ``opentelemetry-instrument [extra_args] python script [script_args]`` from this
    test's venv.

    Spans go to ``receiver`` over OTLP/HTTP; metrics and logs are off. The instrumentors are
    found through their entry points, as for a user.
    """
    bin_dir = Path(sys.executable).parent
    command = [
        str(bin_dir / "opentelemetry-instrument"),
        "--traces_exporter",
        "otlp_proto_http",
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
        key: value for key, value in os.environ.items() if not key.startswith(("OTEL_", "PYTEST_"))
    }
    child_env.update(
        {
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{receiver.endpoint}/v1/traces",
            "OTEL_BSP_SCHEDULE_DELAY": "100",
            "PYTHONUNBUFFERED": "1",
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


class Harness:
    """One test's OpenTelemetry pipeline: spans kept in memory, lifecycle recorded, the
    otel-loopguard processor and guard installed, one framework instrumentor active."""

    def __init__(
        self,
        provider: Any,
        exporter: Any,
        lifecycle: SpanLifecycle,
        guard: Any,
        instrumentor: Any,
    ) -> None:
        self.provider = provider
        self.exporter = exporter
        self.lifecycle = lifecycle
        self.guard = guard
        self.instrumentor = instrumentor

    def uninstrument(self) -> None:
        """Run the next part of a test without the instrumentation (a baseline)."""
        self.instrumentor.uninstrument()

    def reinstrument(self) -> None:
        self.instrumentor.instrument(tracer_provider=self.provider)

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.spans() if span.name == name]

    def tool_spans(self, tool: str) -> list[ReadableSpan]:
        return self.named(f"execute_tool {tool}")

    def executed_tool_spans(self, tool: str) -> list[ReadableSpan]:
        """Tool spans of calls that ran (a pre-call veto ends its span without running)."""
        return [
            span
            for span in self.tool_spans(tool)
            if span.attributes.get("error.type") != "LoopGuardInterrupt"
        ]

    def decisions(self, action: str | None = None) -> list[tuple[ReadableSpan, dict[str, Any]]]:
        """Every ``loopguard.decision`` span event, with the span it is on."""
        found = []
        for span in self.spans():
            for event in span.events:
                if event.name == "loopguard.decision" and (
                    action is None or event.attributes.get("loopguard.action") == action
                ):
                    found.append((span, dict(event.attributes)))
        return found

    def run_state(self, agent: str) -> str:
        """``loopguard.run.state`` of the one ``invoke_agent {agent}`` span."""
        (span,) = self.named(f"invoke_agent {agent}")
        return span.attributes["loopguard.run.state"]

    def assert_all_spans_ended_once(self) -> None:
        assert self.lifecycle.open_spans() == [], "spans left open"
        assert self.lifecycle.ended_more_than_once() == [], "spans ended twice"


class make_harness:
    """``with make_harness(SomeInstrumentor(), mode="enforce") as harness:``."""

    def __init__(self, instrumentor: Any, **config: Any) -> None:
        self._instrumentor = instrumentor
        self._config = config
        self._previous_guard: Any = None

    def __enter__(self) -> Harness:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        from otel_loopguard.config import LoopGuardConfig
        from otel_loopguard.enforcement import LoopGuard, set_guard
        from otel_loopguard.processor import LoopGuardSpanProcessor

        provider = TracerProvider()
        guard = LoopGuard(LoopGuardConfig(**self._config), tracer_provider=provider)
        self._previous_guard = set_guard(guard)
        lifecycle = SpanLifecycle()
        exporter = InMemorySpanExporter()
        provider.add_span_processor(lifecycle)
        provider.add_span_processor(LoopGuardSpanProcessor(guard=guard))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        self._instrumentor.instrument(tracer_provider=provider)
        self._harness = Harness(provider, exporter, lifecycle, guard, self._instrumentor)
        return self._harness

    def __exit__(self, *exc: object) -> None:
        from otel_loopguard.enforcement import set_guard

        self._instrumentor.uninstrument()
        set_guard(self._previous_guard)
        self._harness.provider.shutdown()


def harness_fixtures(instrumentor_class: Any) -> tuple[Any, Any]:
    """The ``loopguard`` (enforce mode) and ``observe_loopguard`` fixtures for a suite.

    In a conftest: ``loopguard, observe_loopguard = harness_fixtures(SomeInstrumentor)``.
    """
    import pytest

    @pytest.fixture(name="loopguard")
    def enforce_fixture() -> Any:
        with make_harness(instrumentor_class(), mode="enforce") as harness:
            yield harness

    @pytest.fixture(name="observe_loopguard")
    def observe_fixture() -> Any:
        with make_harness(instrumentor_class(), mode="observe") as harness:
            yield harness

    return enforce_fixture, observe_fixture
