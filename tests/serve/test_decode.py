"""What ``serve`` reads from an OTLP protobuf request is what the sender's SDK recorded:
spans made by the real SDK, encoded by the real OTLP exporter's encoder, decoded by the
service into views whose attributes (every value type OTLP carries), resource, scope,
status and span events equal the span's own."""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from otel_loopguard.serve.decode import decode_protobuf

ATTRIBUTES = {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": "search",
    "gen_ai.tool.call.arguments": '{"query": "pricing"}',
    "empty.text": "",
    "gen_ai.usage.input_tokens": 120,
    "zero.count": 0,
    "ratio": 0.25,
    "zero.ratio": 0.0,
    "flag": True,
    "off.flag": False,
    "tags": ("a", "", "c"),
    "numbers": (1, 0, 3),
}


def test_every_attribute_value_type_arrives_as_the_sdk_recorded_it() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "agents", "pid": 7}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agent.framework")
    with tracer.start_as_current_span("invoke_agent planner"):
        with tracer.start_as_current_span("execute_tool search", attributes=ATTRIBUTES) as span:
            span.add_event("exception", {"exception.type": "Timeout", "attempt": 2})
            span.set_status(Status(StatusCode.ERROR, "timed out"))
    spans = exporter.get_finished_spans()

    decoded = decode_protobuf(encode_spans(spans).SerializeToString())

    assert decoded.rejected == 0
    views = {view.name: view for view in decoded.views}
    tool = views["execute_tool search"]
    expected = {
        key: list(value) if isinstance(value, tuple) else value for key, value in ATTRIBUTES.items()
    }
    assert dict(tool.attributes) == expected
    assert all(type(tool.attributes[key]) is type(value) for key, value in expected.items())
    assert tool.parent_span_id == views["invoke_agent planner"].span_id
    assert tool.status_code == "error"
    assert tool.status_description == "timed out"
    assert [(event.name, dict(event.attributes)) for event in tool.events] == [
        ("exception", {"exception.type": "Timeout", "attempt": 2})
    ]
    assert tool.resource_attributes["service.name"] == "agents"
    assert tool.resource_attributes["pid"] == 7
    assert tool.scope_name == "agent.framework"
