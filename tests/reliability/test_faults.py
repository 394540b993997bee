"""Faults around the guard: a dead or hanging OTLP endpoint, a detector that raises, odd span order.

- OTLP endpoint down (a closed loopback port) or hanging (a loopback server that accepts and
  never answers), with the real OTLP/HTTP exporter behind a ``BatchSpanProcessor``: the
  agent's tool calls take what they take without the guard (the same set-up with the guard
  disabled, compared as a ratio with a generous margin; a guard that waited on the export
  would add the exporter's timeout to a call) and enforcement still stops a loop.
- A real detector subclass that raises: the run goes on, the other detectors still stop a
  loop, and the error is counted in ``loopguard.internal_errors`` (read through an
  ``InMemoryMetricReader``).
- Spans ending out of order, after their run was evicted, without parents: no error, every
  span exported, an evicted run starts afresh. Arbitrary span sets in random order (a span
  ending twice, one never started, ``max_runs=2``) are the property test
  ``tests/otel/test_processor_properties.py::test_arbitrary_spans_in_any_order_never_raise_nor_err``.
"""

from __future__ import annotations

import socket
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from otel.helpers import make_stack

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import LoopGuardInterrupt
from otel_loopguard.engine.detectors.action_cycle import ActionCycleDetector
from otel_loopguard.engine.detectors.base import build_default_detectors
from otel_loopguard.engine.monitor import Monitor
from otel_loopguard.guard import LoopGuard
from otel_loopguard.guard.decorators import agent_run, loopguard_tool
from otel_loopguard.processor import LoopGuardSpanProcessor

TOOL_WORK = 0.005  # seconds a tool call takes on its own (an I/O wait)
CALLS = 30
EXPORT_TIMEOUT = 1.0  # the OTLP exporter's own timeout per export


def _closed_port() -> int:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return port


class HangingServer:
    """Accepts connections on loopback and never answers (a collector that is stuck)."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.accepted.append(connection)  # held open, never read, never answered

    def close(self) -> None:
        self.listener.close()
        for connection in self.accepted:
            connection.close()
        self._thread.join(timeout=5)


@contextmanager
def endpoint(kind: str) -> Iterator[str]:
    if kind == "down":
        yield f"http://127.0.0.1:{_closed_port()}/v1/traces"
        return
    server = HangingServer()
    try:
        yield f"http://127.0.0.1:{server.port}/v1/traces"
    finally:
        server.close()


def _otlp_setup(url: str, enabled: bool) -> tuple[TracerProvider, LoopGuard, OTLPSpanExporter]:
    provider = TracerProvider()
    guard = LoopGuard(
        LoopGuardConfig(mode="enforce", enabled=enabled),
        meter_provider=MeterProvider(metric_readers=[InMemoryMetricReader()]),
        tracer_provider=provider,
    )
    provider.add_span_processor(LoopGuardSpanProcessor(guard))
    # small batches, short delay: exports are attempted (and stuck) while the agent works
    exporter = OTLPSpanExporter(endpoint=url, timeout=EXPORT_TIMEOUT)
    provider.add_span_processor(
        BatchSpanProcessor(exporter, schedule_delay_millis=20, max_export_batch_size=4)
    )
    return provider, guard, exporter


def _call_durations(provider: TracerProvider, guard: LoopGuard) -> list[float]:
    tracer = provider.get_tracer("tests.faults")

    @loopguard_tool(tracer=tracer, guard=guard)
    def fetch(page: int) -> str:
        time.sleep(TOOL_WORK)
        return f"page {page}: 10 items"

    durations = []
    with agent_run("crawler", tracer=tracer, guard=guard):
        for page in range(CALLS):
            started = time.perf_counter()
            fetch(page)
            durations.append(time.perf_counter() - started)
    return durations


def _loop_is_stopped(provider: TracerProvider, guard: LoopGuard) -> bool:
    tracer = provider.get_tracer("tests.faults")

    @loopguard_tool(tracer=tracer, guard=guard)
    def search(query: str) -> str:
        return "no results"

    try:
        with agent_run("stuck", tracer=tracer, guard=guard):
            for _ in range(10):
                search("pricing")
    except LoopGuardInterrupt:
        return True
    return False


def _shutdown(provider: TracerProvider, exporter: OTLPSpanExporter) -> None:
    """Shut down without waiting out the retries: the exporter first, then the pipeline."""
    exporter.shutdown()  # interrupts the exporter's retry back-off
    closer = threading.Thread(target=provider.shutdown, daemon=True)
    closer.start()
    closer.join(timeout=3 * EXPORT_TIMEOUT)


@pytest.mark.parametrize("kind", ["down", "hanging"])
def test_a_dead_or_hanging_otlp_endpoint_does_not_slow_tool_calls(kind: str) -> None:
    medians = {}
    for enabled in (False, True, False, True):  # interleaved: the same machine load
        with endpoint(kind) as url:
            provider, guard, exporter = _otlp_setup(url, enabled)
            durations = _call_durations(provider, guard)
            medians.setdefault(enabled, []).append(statistics.median(durations))
            assert max(durations) < EXPORT_TIMEOUT, "a tool call waited for the exporter"
            if enabled:
                assert _loop_is_stopped(provider, guard), "enforcement failed with export down"
                assert guard.monitor.internal_errors == 0
        _shutdown(provider, exporter)
    with_guard = min(medians[True])
    without = min(medians[False])
    # generous: the guard's own cost per call is well under a millisecond; the exporter's
    # timeout, if the guard ever waited on it, is seconds
    assert with_guard <= 3 * without + 0.005, (with_guard, without)


class BrokenActionCycle(ActionCycleDetector):
    """A real detector whose observe fails on every result (a bug in a detector)."""

    def observe(self, event: Any, state: Any, counters: Any) -> Any:
        if event.kind.value == "tool_result":
            raise ZeroDivisionError("detector bug")
        return super().observe(event, state, counters)


def test_a_raising_detector_is_counted_and_the_run_goes_on() -> None:
    reader = InMemoryMetricReader()
    config = LoopGuardConfig(mode="enforce")
    detectors = [
        BrokenActionCycle(config) if d.name == "action_cycle" else d
        for d in build_default_detectors(config)
    ]
    provider = TracerProvider()
    guard = LoopGuard(
        config,
        monitor=Monitor(config, detectors=detectors),
        meter_provider=MeterProvider(metric_readers=[reader]),
        tracer_provider=provider,
    )
    provider.add_span_processor(LoopGuardSpanProcessor(guard))
    tracer = provider.get_tracer("tests.faults")
    done = []

    @loopguard_tool(tracer=tracer, guard=guard)
    def lookup(key: str) -> str:
        done.append(key)
        return f"value of {key}"

    with agent_run("healthy", tracer=tracer, guard=guard):
        for index in range(5):
            lookup(f"k{index}")
    assert done == [f"k{index}" for index in range(5)]  # every call ran and returned
    assert _loop_is_stopped(provider, guard)  # the other detectors still stop a loop

    errors = 0
    data = reader.get_metrics_data()
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == "loopguard.internal_errors":
                    errors += sum(point.value for point in metric.data.data_points)
    assert guard.monitor.internal_errors >= 5
    assert errors == guard.monitor.internal_errors


def test_spans_out_of_order_after_eviction_and_without_parents() -> None:
    stack = make_stack(max_runs=1)
    tracer = stack.tracer

    def tool(name: str, context: Any = None) -> Any:
        return tracer.start_span(
            f"execute_tool {name}",
            context=context,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.arguments": '{"q": "same"}',
                "gen_ai.tool.call.result": "no results",
            },
        )

    first = tracer.start_span(
        "invoke_agent first", attributes={"gen_ai.operation.name": "invoke_agent"}
    )
    first_context = trace.set_span_in_context(first)
    early = [tool("search", first_context) for _ in range(3)]
    second = tracer.start_span(
        "invoke_agent second", attributes={"gen_ai.operation.name": "invoke_agent"}
    )
    second_context = trace.set_span_in_context(second)
    late = tool("search", second_context)
    late.end()  # the second run is fed: with max_runs=1 the first run is evicted
    first.end()  # a parent ends before its children
    for span in reversed(early):  # children of an evicted, ended run, in reverse order
        span.end()
    orphans = [tool("fetch") for _ in range(3)]  # no parent at all: each its own trace
    for span in orphans:
        span.end()
    second.end()
    assert len(stack.spans()) >= 3 + 1 + 2 + 3
    assert stack.metric_total("loopguard.internal_errors") == 0
    assert stack.guard.monitor.internal_errors == 0
    assert stack.guard.monitor.active_runs <= 1
    assert len(stack.guard.follower) <= 1
