"""Shared test helpers: a real SDK provider with the processor, exporter and metric reader."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.guard import LoopGuard
from otel_loopguard.processor import LoopGuardSpanProcessor


@dataclass
class Stack:
    guard: LoopGuard
    provider: TracerProvider
    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader
    tracer: Any

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        found = list(self.exporter.get_finished_spans())
        return [s for s in found if name is None or s.name == name]

    def decision_events(self) -> list[tuple[ReadableSpan, Any]]:
        return [
            (span, event)
            for span in self.exporter.get_finished_spans()
            for event in span.events
            if event.name == "loopguard.decision"
        ]

    def metric_points(self, name: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        points: list[Any] = []
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        points.extend(metric.data.data_points)
        return points

    def metric_total(self, name: str, **labels: str) -> float:
        return sum(
            p.value
            for p in self.metric_points(name)
            if all(p.attributes.get(k.replace("__", ".")) == v for k, v in labels.items())
        )


def make_stack(**config: Any) -> Stack:
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    provider = TracerProvider()
    guard = LoopGuard(
        LoopGuardConfig(**config), meter_provider=meter_provider, tracer_provider=provider
    )
    exporter = InMemorySpanExporter()
    provider.add_span_processor(LoopGuardSpanProcessor(guard))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return Stack(guard, provider, exporter, reader, provider.get_tracer("tests.agent"))
