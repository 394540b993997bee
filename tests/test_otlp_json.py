"""OTLP JSON encoding: hex ids and integer enums, as the OTLP JSON mapping requires."""

from __future__ import annotations

import json

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from otel_loopguard.spans.otlp_json import spans_to_otlp_json, write_otlp_json


def _spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("invoke_agent support"):
        with tracer.start_as_current_span(
            "execute_tool search", kind=SpanKind.INTERNAL, attributes={"gen_ai.tool.name": "search"}
        ) as span:
            span.set_status(StatusCode.ERROR, "no results")
    return exporter.get_finished_spans()


def test_ids_are_hex_and_match_the_sdk_spans(tmp_path) -> None:
    spans = _spans()
    path = write_otlp_json(spans, tmp_path / "trace.json")
    data = json.loads(path.read_text())
    encoded = [s for rs in data["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    by_name = {s["name"]: s for s in encoded}
    for span in spans:
        out = by_name[span.name]
        assert out["traceId"] == format(span.context.trace_id, "032x")
        assert out["spanId"] == format(span.context.span_id, "016x")
    tool = by_name["execute_tool search"]
    assert tool["parentSpanId"] == by_name["invoke_agent support"]["spanId"]
    assert tool["status"]["code"] == 2  # enums are integers in OTLP JSON
    assert tool["attributes"] == [{"key": "gen_ai.tool.name", "value": {"stringValue": "search"}}]
    assert spans_to_otlp_json(spans) == data
