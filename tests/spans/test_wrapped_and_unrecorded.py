"""Wrapped payloads and parts without content (issue 17, points 2 and 3).

The attribute values are what the real instrumentations wrote (captured from
opentelemetry-instrumentation-langchain 0.62.4 on a LangGraph ReAct graph and from
pydantic-ai 2.68 with ``include_content=False``); the compat suites drive the real
instrumentations themselves (compat/traceloop-langchain, instrumentation/pydantic_ai).
"""

from __future__ import annotations

import json

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.events import EventKind
from otel_loopguard.spans.events import span_to_events
from otel_loopguard.spans.payloads import unwrap_arguments, unwrap_result
from otel_loopguard.spans.view import SpanView

CONFIG = LoopGuardConfig()
TRACE = "0af7651916cd43dd8448eb211c80319c"


def _traceloop_tool_span(step: int, call_id: str, span_id: str) -> SpanView:
    """Traceloop's LangChain tool span of ``search(query="pro plan price")`` -> "no results"
    at LangGraph step ``step``: the envelope's step and id change every call."""
    metadata = {
        "ls_integration": "langgraph",
        "langgraph_step": step,
        "langgraph_node": "tools",
        "langgraph_checkpoint_ns": f"tools:{span_id}",
    }
    arguments = {
        "input_str": "{'query': 'pro plan price'}",
        "tags": ["seq:step:1"],
        "metadata": metadata,
        "inputs": {"query": "pro plan price"},
        "kwargs": {"color": "green", "name": None, "tool_call_id": call_id},
    }
    message = {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", "ToolMessage"],
        "kwargs": {
            "content": "no results",
            "type": "tool",
            "name": "search",
            "tool_call_id": call_id,
            "status": "success",
        },
    }
    result = {"output": message, "kwargs": {"tags": ["seq:step:1"], "color": "green"}}
    return SpanView(
        "execute_tool search",
        TRACE,
        span_id,
        attributes={
            "traceloop.span.kind": "tool",
            "traceloop.entity.name": "search",
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "search",
            "gen_ai.tool.call.arguments": json.dumps(arguments),
            "gen_ai.tool.call.result": json.dumps(result),
        },
    )


def test_traceloop_envelope_signs_what_the_tool_got_and_returned() -> None:
    first = span_to_events(_traceloop_tool_span(2, "call_0", "b7ad6b7169203331"), "r", CONFIG)
    again = span_to_events(_traceloop_tool_span(4, "call_1", "c7ad6b7169203332"), "r", CONFIG)

    call, result = first
    assert call.kind is EventKind.TOOL_CALL and result.kind is EventKind.TOOL_RESULT
    assert call.arguments == {"query": "pro plan price"}
    assert result.output == "no results"
    # the tool-call id the envelope carries is the call's: pairing and de-duplication use it
    assert (call.call_id, result.call_id) == ("call_0", "call_0")
    # step number, checkpoint and id ignored: the same call, the same result
    assert call.signature == again[0].signature
    assert result.signature == again[1].signature
    assert "content_recorded" not in call.details


def test_envelope_without_inputs_falls_back_to_the_input_string() -> None:
    arguments, call_id = unwrap_arguments({"input_str": "pricing", "tags": [], "metadata": {}})
    assert (arguments, call_id) == ("pricing", None)


def test_payloads_that_are_not_envelopes_are_left_alone() -> None:
    own = {"input_str": "a tool whose argument is named input_str"}
    assert unwrap_arguments(own) == (own, None)
    assert unwrap_result({"output": "x", "other": 1}) == {"output": "x", "other": 1}
    assert unwrap_result("no results") == "no results"
    plain_message = {"type": "tool", "content": "3 rows", "tool_call_id": "call_9"}
    assert unwrap_result(plain_message) == "3 rows"
    serialized_ai = {"lc": 1, "type": "constructor", "id": ["x", "AIMessage"], "kwargs": {}}
    assert unwrap_result(serialized_ai) == serialized_ai


def _pydantic_ai_chat(span_id: str, parts: list[dict]) -> SpanView:
    return SpanView(
        "chat function:respond",
        TRACE,
        span_id,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}]),
            "gen_ai.usage.input_tokens": 51,
            "gen_ai.usage.output_tokens": 6,
        },
    )


def test_tool_call_parts_without_arguments_are_not_identical_steps() -> None:
    """pydantic-ai with content off: each turn asks for ``search`` with unknown arguments."""
    turns = [
        span_to_events(
            _pydantic_ai_chat(
                f"b7ad6b716920333{i}", [{"type": "tool_call", "id": f"pyd_{i}", "name": "search"}]
            ),
            "r",
            CONFIG,
        )[0]
        for i in range(3)
    ]
    steps = {turn.requested_tool_calls for turn in turns}
    assert len(steps) == 3  # never the identical step three times
    assert all(turn.requested_tool_calls and not turn.empty for turn in turns)


def test_tool_call_parts_with_arguments_still_are() -> None:
    part = {"type": "tool_call", "id": "x", "name": "search", "arguments": {"query": "a"}}
    turns = [
        span_to_events(_pydantic_ai_chat(f"b7ad6b716920333{i}", [part]), "r", CONFIG)[0]
        for i in range(2)
    ]
    assert turns[0].requested_tool_calls == turns[1].requested_tool_calls


def test_a_text_part_without_content_is_not_an_empty_answer() -> None:
    (answer,) = span_to_events(
        _pydantic_ai_chat("b7ad6b7169203331", [{"type": "text"}]), "r", CONFIG
    )
    assert answer.empty is False
    (empty,) = span_to_events(
        _pydantic_ai_chat("b7ad6b7169203332", [{"type": "text", "content": " "}]), "r", CONFIG
    )
    assert empty.empty is True


def _adk_tool_span(call: int) -> SpanView:
    """OpenInference's Google ADK tool span (openinference-instrumentation-google-adk 1.0.5)
    of ``search(query="pricing")`` -> "no results": the result is ADK's whole function
    response, its id new with every call."""
    response = {"id": f"call_{call}_0", "name": "search", "response": {"result": "no results"}}
    return SpanView(
        "execute_tool search",
        TRACE,
        f"{call:016x}",
        attributes={
            "openinference.span.kind": "TOOL",
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "search",
            "gen_ai.tool.call.id": f"call_{call}_0",
            "tool.name": "search",
            "input.value": '{"query": "pricing"}',
            "output.value": json.dumps(response, separators=(",", ":")),
        },
    )


def test_adk_function_response_is_unwrapped_to_what_the_tool_returned() -> None:
    first = span_to_events(_adk_tool_span(1), "r", CONFIG)
    again = span_to_events(_adk_tool_span(2), "r", CONFIG)
    assert first[1].output == {"result": "no results"}
    assert first[1].signature == again[1].signature  # only the response id differed
    assert unwrap_result({"id": "x", "name": "search", "response": {"a": 1}}) == {"a": 1}
    # a tool's own result that merely has such keys among others is left alone
    own = {"id": "x", "name": "search", "response": 1, "extra": 2}
    assert unwrap_result(own) == own
