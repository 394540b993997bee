"""Events from spans: spans of every instrumentation users run become the same events."""

from __future__ import annotations

import json

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.events import EventKind
from otel_loopguard.engine.run_identity import run_identity
from otel_loopguard.spans.classify import SpanClass, classify
from otel_loopguard.spans.events import span_to_events
from otel_loopguard.spans.identity import conversation_id
from otel_loopguard.spans.view import SpanView, from_readable_span

CONFIG = LoopGuardConfig()
TRACE = "0af7651916cd43dd8448eb211c80319c"


def view(name: str, attributes: dict, **kwargs) -> SpanView:
    return SpanView(
        name=name, trace_id=TRACE, span_id="b7ad6b7169203331", attributes=attributes, **kwargs
    )


def test_from_readable_span_reads_a_real_sdk_span() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test-scope")
    with (
        tracer.start_as_current_span("parent"),
        tracer.start_as_current_span(
            "execute_tool search", kind=SpanKind.CLIENT, attributes={"gen_ai.tool.name": "search"}
        ) as span,
    ):
        span.add_event("exception", {"exception.type": "ValueError"})
        span.set_status(Status(StatusCode.ERROR, "boom"))
    child, parent = exporter.get_finished_spans()
    seen = from_readable_span(child)
    assert seen.trace_id == format(child.context.trace_id, "032x") and len(seen.trace_id) == 32
    assert seen.span_id == format(child.context.span_id, "016x")
    assert seen.parent_span_id == format(parent.context.span_id, "016x")
    assert (seen.kind, seen.status_code, seen.status_description) == ("client", "error", "boom")
    assert seen.events[0].name == "exception" and seen.events[0].attributes["exception.type"]
    assert seen.scope_name == "test-scope"
    assert "service.name" in seen.resource_attributes
    assert from_readable_span(parent).parent_span_id is None


def test_semconv_tool_span_becomes_call_and_result_with_content() -> None:
    span = view(
        "execute_tool search",
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "search",
            "gen_ai.tool.call.id": "call_1",
            "gen_ai.tool.call.arguments": json.dumps({"query": "pricing"}),
            "gen_ai.tool.call.result": "no results",
            "gen_ai.agent.name": "researcher",
        },
        end_time_unix_nano=2_000_000_000,
    )
    call, result = span_to_events(span, "run-1", CONFIG)
    assert (call.kind, result.kind) == (EventKind.TOOL_CALL, EventKind.TOOL_RESULT)
    assert call.arguments == {"query": "pricing"} and result.output == "no results"
    assert (call.tool_name, call.actor, call.call_id, call.run_id) == (
        "search",
        "researcher",
        "call_1",
        "run-1",
    )
    assert (call.trace_id, call.span_id, call.timestamp) == (TRACE, "b7ad6b7169203331", 2.0)
    # the same call in another dialect has the same signature (arguments decoded alike)
    same = view(
        "search",
        {
            "openinference.span.kind": "TOOL",
            "tool.name": "search",
            "input.value": '{"query": "pricing"}',
            "output.value": "no results",
        },
    )
    call2, result2 = span_to_events(same, "run-1", CONFIG, actor="researcher")
    assert call2.signature == call.signature and result2.signature == result.signature
    assert call2.actor == "researcher"
    other = view(
        "search",
        {
            "traceloop.span.kind": "tool",
            "traceloop.entity.name": "search",
            "traceloop.entity.input": '{"query": "weather"}',
        },
    )
    assert span_to_events(other, "run-1", CONFIG)[0].signature != call.signature


def test_unrecorded_content_never_makes_two_calls_look_identical() -> None:
    first = view(
        "execute_tool search",
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"},
    )
    second = SpanView(
        "execute_tool search", TRACE, "00000000000000aa", attributes=dict(first.attributes)
    )
    a_call, a_result = span_to_events(first, "r", CONFIG)
    b_call, b_result = span_to_events(second, "r", CONFIG)
    assert a_call.signature != b_call.signature and a_result.signature != b_result.signature
    assert a_call.details["content_recorded"] is False
    assert a_call.tool_name == b_call.tool_name == "search"


def test_tool_errors_from_status_error_type_and_exception_events() -> None:
    from otel_loopguard.spans.view import SpanEventView

    span = view(
        "running tool",
        {
            "gen_ai.tool.name": "fetch",
            "tool_arguments": '{"url": "x"}',
            "error.type": "HTTPError",
            "http.response.status_code": 404,
        },
        status_code="error",
        events=(
            SpanEventView(
                "exception", {"exception.type": "HTTPError", "exception.message": "404 Not Found"}
            ),
        ),
    )
    _call, error = span_to_events(span, "r", CONFIG)
    assert error.kind is EventKind.TOOL_ERROR
    assert (error.error.type, error.error.message, error.error.status_code) == (
        "HTTPError",
        "404 Not Found",
        404,
    )
    mcp = view(
        "tools/call read",
        {"mcp.method.name": "tools/call", "gen_ai.tool.name": "read", "error.type": "tool_error"},
    )
    assert span_to_events(mcp, "r", CONFIG)[1].error.type == "tool_error"
    status_only = view(
        "x",
        {"openinference.span.kind": "TOOL", "tool.name": "x"},
        status_code="error",
        status_description="denied",
    )
    assert span_to_events(status_only, "r", CONFIG)[1].error.message == "denied"


def test_llm_span_finish_reason_usage_and_requested_tool_calls_in_three_dialects() -> None:
    semconv = view(
        "chat m",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "m",
            "gen_ai.response.finish_reasons": ("tool_calls",),
            "gen_ai.usage.input_tokens": 100,
            "gen_ai.usage.output_tokens": 20,
            "gen_ai.output.messages": json.dumps(
                [
                    {
                        "role": "assistant",
                        "parts": [
                            {
                                "type": "tool_call",
                                "id": "1",
                                "name": "search",
                                "arguments": {"q": "a"},
                            },
                            {
                                "type": "tool_call",
                                "id": "2",
                                "name": "read",
                                "arguments": {"p": "b"},
                            },
                        ],
                        "finish_reason": "tool_call",
                    }
                ]
            ),
        },
    )
    openinference = view(
        "LLM",
        {
            "openinference.span.kind": "LLM",
            "llm.model_name": "m",
            "llm.token_count.prompt": 100,
            "llm.token_count.completion": 20,
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "read",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"p": "b"}',
            "llm.output_messages.0.message.tool_calls.1.tool_call.function.name": "search",
            "llm.output_messages.0.message.tool_calls.1.tool_call.function.arguments": '{"q": "a"}',
        },
    )
    openllmetry = view(
        "openai.chat",
        {
            "llm.request.type": "chat",
            "gen_ai.usage.prompt_tokens": 100,
            "gen_ai.usage.completion_tokens": 20,
            "gen_ai.completion.0.finish_reason": "tool_calls",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.tool_calls.0.name": "search",
            "gen_ai.completion.0.tool_calls.0.arguments": '{"q": "a"}',
            "gen_ai.completion.0.tool_calls.1.name": "read",
            "gen_ai.completion.0.tool_calls.1.arguments": '{"p": "b"}',
        },
    )
    events = [span_to_events(v, "r", CONFIG)[0] for v in (semconv, openinference, openllmetry)]
    assert all(e.kind is EventKind.LLM_RESPONSE for e in events)
    assert all((e.input_tokens, e.output_tokens) == (100, 20) for e in events)
    assert events[0].finish_reason == events[2].finish_reason == "tool_calls"
    # the same set of requested calls, whatever the order or dialect
    assert events[0].requested_tool_calls == events[1].requested_tool_calls
    assert events[1].requested_tool_calls == events[2].requested_tool_calls
    assert len(events[0].requested_tool_calls) == 2
    assert not any(e.empty for e in events)


def test_empty_end_turn_is_empty_only_when_content_was_recorded() -> None:
    empty = view(
        "chat m",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.response.finish_reasons": ["stop"],
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": " "}]}]
            ),
        },
    )
    unknown = view(
        "chat m", {"gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": ["stop"]}
    )
    truncated = view(
        "chat m", {"gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": ["length"]}
    )
    assert span_to_events(empty, "r", CONFIG)[0].empty is True
    assert span_to_events(unknown, "r", CONFIG)[0].empty is False
    assert span_to_events(truncated, "r", CONFIG)[0].finish_reason == "length"


@pytest.mark.parametrize("name", ["transfer_to_agent", "handoff_to_agent"])
def test_adk_transfer_to_agent_tool_is_a_tool_call_not_a_handoff_to_agent(name: str) -> None:
    """Google ADK's ``transfer_to_agent`` and a Strands swarm's ``handoff_to_agent`` carry
    their target in their arguments: reading "agent" from the name would report every
    transfer as a handoff to an agent "agent"."""
    tool = view(
        f"execute_tool {name}",
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name},
    )
    assert classify(tool) is SpanClass.TOOL
    kinds = [event.kind for event in span_to_events(tool, "r", CONFIG, actor="alice")]
    assert kinds == [EventKind.TOOL_CALL, EventKind.TOOL_RESULT]


def test_handoffs_from_transfer_tools_and_agent_sdk_spans() -> None:
    tool = view(
        "execute_tool transfer_to_billing",
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "transfer_to_billing"},
    )
    # a transfer tool is a tool call (call, result) and then the handoff, as the gate feeds it
    call, result, event = span_to_events(tool, "r", CONFIG, actor="triage")
    assert (call.kind, call.tool_name) == (EventKind.TOOL_CALL, "transfer_to_billing")
    assert result.kind is EventKind.TOOL_RESULT
    assert (event.kind, event.actor, event.target_agent) == (EventKind.HANDOFF, "triage", "billing")
    sdk = view("Handoff: billing → triage", {})
    (back,) = span_to_events(sdk, "r", CONFIG)
    assert (back.actor, back.target_agent) == ("billing", "triage")
    sentry = view("handoff from triage to refunds", {"gen_ai.operation.name": "handoff"})
    assert classify(sentry) is SpanClass.HANDOFF
    (forward,) = span_to_events(sentry, "r", CONFIG)
    assert (forward.actor, forward.target_agent) == ("triage", "refunds")
    mlflow = view("Handoff", {"from_agent": "a", "to_agent": "b"})
    assert span_to_events(mlflow, "r", CONFIG)[0].target_agent == "b"
    by_attrs = view(
        "handoff", {"openinference.span.kind": "TOOL", "tool.name": "handoff_to_triage"}
    )
    assert span_to_events(by_attrs, "r", CONFIG, actor="billing")[-1].target_agent == "triage"


def test_run_identity_prefers_conversation_then_root_then_trace() -> None:
    assert conversation_id(view("x", {"gen_ai.conversation.id": "c1"})) == "c1"
    assert conversation_id(view("x", {"session.id": "s1"})) == "s1"
    assert conversation_id(view("x", {"traceloop.association.properties.session_id": "t1"})) == "t1"
    assert run_identity(TRACE, conversation="c1", root_span_id="ab").run_id == "c1"
    root = run_identity(TRACE, root_span_id="00000000000000ab")
    assert (root.run_id, root.keyed_by) == (f"{TRACE}:00000000000000ab", "root")
    assert run_identity(TRACE).keyed_by == "trace"


def test_other_spans_give_no_events_and_odd_values_do_not_raise() -> None:
    assert span_to_events(view("GET /", {"http.route": "/"}), "r", CONFIG) == []
    odd = view(
        "execute_tool",
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": 5,
            "gen_ai.tool.call.arguments": b"\xff",
            "error.type": 3.5,
            "gen_ai.output.messages": "not json",
        },
    )
    events = span_to_events(odd, "r", CONFIG)
    assert events[0].tool_name == "execute_tool" and events[1].error.type == "3.5"
