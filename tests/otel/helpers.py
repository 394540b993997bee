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


def in_process_server_span(
    tracer: Any, send: Any, name: str, attributes: dict[str, Any], kind: Any = None
) -> None:
    """The span of an MCP server running in this process, for one request: its parent is
    the client's ``MCP send`` span ``send``, as extracted from the request (so remote)."""
    from opentelemetry import trace

    sent = send.get_span_context()
    remote = trace.SpanContext(
        sent.trace_id, sent.span_id, is_remote=True, trace_flags=sent.trace_flags
    )
    with tracer.start_as_current_span(
        name,
        context=trace.set_span_in_context(trace.NonRecordingSpan(remote)),
        kind=kind if kind is not None else trace.SpanKind.INTERNAL,
        attributes=attributes,
    ):
        pass


def foreign_tool_span(
    tracer: Any,
    tool: str,
    *,
    call_id: str | None = None,
    arguments: str | None = None,
    result: str | None = None,
    agent: str | None = None,
) -> Any:
    """The ``execute_tool {tool}`` span another GenAI instrumentation makes (semconv
    attributes; the call id, arguments, result and calling agent only when given), to use
    as ``with foreign_tool_span(...):``."""
    attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool}
    optional = {
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.call.arguments": arguments,
        "gen_ai.tool.call.result": result,
        "gen_ai.agent.name": agent,
    }
    attributes.update({key: value for key, value in optional.items() if value is not None})
    return tracer.start_as_current_span(f"execute_tool {tool}", attributes=attributes)


def foreign_agent_span(tracer: Any, agent: str) -> Any:
    """The ``invoke_agent {agent}`` span another GenAI instrumentation makes (the operation
    name only), to use as ``with foreign_agent_span(...):``."""
    return tracer.start_as_current_span(
        f"invoke_agent {agent}", attributes={"gen_ai.operation.name": "invoke_agent"}
    )


def foreign_fetch_loop(tracer: Any, agent: str = "scout", calls: int = 4) -> None:
    """A foreign agent (GenAI semconv spans, instrumented by someone else) looping: its
    ``invoke_agent {agent}`` span holds ``calls`` identical failing ``fetch`` calls, with
    their arguments and result recorded; no gate wraps them."""
    with foreign_agent_span(tracer, agent):
        for _ in range(calls):
            arguments = '{"url": "https://example.invalid/a"}'
            with foreign_tool_span(tracer, "fetch", arguments=arguments, result="404 not found"):
                pass


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
