"""Real traces for the analyze tests: agents run under the OpenTelemetry SDK, exported as
OTLP JSON (the SDK's protobuf encoder + the OTLP JSON rules), as Collector-style JSON lines,
and as Jaeger JSON (built from the same SDK spans per Jaeger's JSON model)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from otel_loopguard.spans.otlp_json import spans_to_otlp_json

SCOPE = "otel-loopguard-tests"


class Recorder:
    """A tracer provider whose finished spans are kept, in end order, as an exporter sees them."""

    def __init__(self, service: str = "support-bot") -> None:
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": service}))
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = provider.get_tracer(SCOPE, "1.0")

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())


def agent_run(
    recorder: Recorder,
    agent: str,
    calls: Sequence[tuple[str, Any, str]],
    *,
    conversation: str | None = None,
    tokens_per_turn: int = 0,
    failing_tool: str | None = None,
) -> list[ReadableSpan]:
    """One GenAI-semconv agent run: a model turn (when ``tokens_per_turn``) before each tool
    call; returns the spans this run added, in end order."""
    before = len(recorder.spans())
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": agent,
    }
    if conversation:
        attributes["gen_ai.conversation.id"] = conversation
    tracer = recorder.tracer
    with tracer.start_as_current_span(f"invoke_agent {agent}", attributes=attributes):
        for tool, arguments, result in calls:
            if tokens_per_turn:
                with tracer.start_as_current_span(
                    "chat gpt-test",
                    kind=SpanKind.CLIENT,
                    attributes={
                        "gen_ai.operation.name": "chat",
                        "gen_ai.request.model": "gpt-test",
                        "gen_ai.usage.input_tokens": tokens_per_turn,
                        "gen_ai.usage.output_tokens": 10,
                        "gen_ai.response.finish_reasons": ("tool_calls",),
                    },
                ):
                    pass
            with tracer.start_as_current_span(
                f"execute_tool {tool}",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": tool,
                    "gen_ai.tool.call.arguments": json.dumps(arguments),
                    "gen_ai.tool.call.result": result,
                },
            ) as span:
                span.add_event("tool.progress", {"step": 1})
                if tool == failing_tool:
                    span.set_attribute("error.type", "NotFound")
                    span.set_status(Status(StatusCode.ERROR, "404 not found"))
    return recorder.spans()[before:]


# -- writers ---------------------------------------------------------------------------------


def write_otlp(path: Path, spans: Sequence[ReadableSpan], indent: int | None = None) -> Path:
    path.write_text(json.dumps(spans_to_otlp_json(spans), indent=indent), encoding="utf-8")
    return path


def jsonl_text(batches: Iterable[Sequence[ReadableSpan]]) -> str:
    """What the Collector's file exporter writes: one export request per line."""
    return "".join(json.dumps(spans_to_otlp_json(batch)) + "\n" for batch in batches)


def batches(spans: Sequence[ReadableSpan], size: int) -> list[list[ReadableSpan]]:
    return [list(spans[i : i + size]) for i in range(0, len(spans), size)]


def gzip_file(path: Path, text: str) -> Path:
    path.write_bytes(gzip.compress(text.encode("utf-8")))
    return path


_JAEGER_KINDS = {
    SpanKind.INTERNAL: "internal",
    SpanKind.SERVER: "server",
    SpanKind.CLIENT: "client",
    SpanKind.PRODUCER: "producer",
    SpanKind.CONSUMER: "consumer",
}


def _jaeger_tag(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "type": "bool", "value": value}
    if isinstance(value, int):
        return {"key": key, "type": "int64", "value": value}
    if isinstance(value, float):
        return {"key": key, "type": "float64", "value": value}
    if isinstance(value, (tuple, list)):  # Jaeger keeps OTLP arrays as JSON strings
        return {"key": key, "type": "string", "value": json.dumps(list(value))}
    return {"key": key, "type": "string", "value": str(value)}


def jaeger_export(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """``{"data": [trace, ...]}`` as Jaeger's HTTP API and UI export write it."""
    traces: dict[str, dict[str, Any]] = {}
    for span in spans:
        trace_id = format(span.context.trace_id, "032x")
        trace = traces.setdefault(
            trace_id,
            {"traceID": trace_id, "spans": [], "processes": {}, "warnings": None},
        )
        process_id = "p1"
        resource = dict(span.resource.attributes)
        service = str(resource.pop("service.name", "unknown"))
        trace["processes"][process_id] = {
            "serviceName": service,
            "tags": [_jaeger_tag(k, v) for k, v in resource.items()],
        }
        tags = [_jaeger_tag(k, v) for k, v in (span.attributes or {}).items()]
        tags.append(_jaeger_tag("otel.scope.name", span.instrumentation_scope.name))
        tags.append(_jaeger_tag("span.kind", _JAEGER_KINDS[span.kind]))
        if span.status.status_code is StatusCode.ERROR:
            tags.append(_jaeger_tag("otel.status_code", "ERROR"))
            tags.append(_jaeger_tag("error", True))
            if span.status.description:
                tags.append(_jaeger_tag("otel.status_description", span.status.description))
        references = []
        if span.parent is not None:
            references.append(
                {
                    "refType": "CHILD_OF",
                    "traceID": trace_id,
                    "spanID": format(span.parent.span_id, "016x"),
                }
            )
        trace["spans"].append(
            {
                "traceID": trace_id,
                "spanID": format(span.context.span_id, "016x"),
                "flags": 1,
                "operationName": span.name,
                "references": references,
                "startTime": span.start_time // 1000,
                "duration": (span.end_time - span.start_time) // 1000,
                "tags": tags,
                "logs": [
                    {
                        "timestamp": event.timestamp // 1000,
                        "fields": [_jaeger_tag("event", event.name)]
                        + [_jaeger_tag(k, v) for k, v in (event.attributes or {}).items()],
                    }
                    for event in span.events
                ],
                "processID": process_id,
                "warnings": None,
            }
        )
    return {"data": list(traces.values()), "total": 0, "limit": 0, "offset": 0, "errors": None}
