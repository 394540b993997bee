"""OpenLLMetry's LlamaIndex tool runs and Langfuse's observations (issue 29, points 5 and 7).

The attribute values are what the real instrumentations wrote (opentelemetry-instrumentation-
llamaindex 0.62.4 on a ``FunctionAgent``, langfuse 5.0.4's ``@observe``); the compat suites
drive the real instrumentations themselves (compat/traceloop-llama-index, compat/langfuse).
"""

from __future__ import annotations

import json

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.events import EventKind
from otel_loopguard.spans.classify import AGENT, LLM, OTHER, TOOL, classify_parts
from otel_loopguard.spans.events import span_to_events
from otel_loopguard.spans.payloads import unwrap_arguments
from otel_loopguard.spans.view import SpanView

CONFIG = LoopGuardConfig()
TRACE = "0af7651916cd43dd8448eb211c80319c"


def _function_tool_span(span_id: str, query: str, *, error: bool = False, content=True):
    output = {
        "blocks": [{"block_type": "text", "text": "no results"}],
        "tool_name": "search",
        "raw_input": {"args": [], "kwargs": {"query": query}},
        "raw_output": "Error: index offline" if error else "no results",
        "is_error": error,
    }
    attributes = {
        "traceloop.span.kind": "task",
        "traceloop.entity.name": "FunctionTool.task",
    }
    if content:
        attributes["traceloop.entity.input"] = json.dumps({"kwargs": {"query": query}})
        attributes["traceloop.entity.output"] = json.dumps(output)
    return SpanView("FunctionTool.task", TRACE, span_id, attributes=attributes)


def test_a_function_tool_task_span_is_the_tool_named_in_its_result() -> None:
    view = _function_tool_span("00f067aa0ba902b7", "pro plan price")
    assert classify_parts(view.name, view.attributes) is TOOL
    call, result = span_to_events(view, "run", CONFIG)
    assert (call.kind, call.tool_name, call.arguments) == (
        EventKind.TOOL_CALL,
        "search",
        {"query": "pro plan price"},
    )
    assert (result.kind, result.output) == (EventKind.TOOL_RESULT, "no results")


def test_the_same_call_twice_signs_alike_and_another_query_does_not() -> None:
    first = span_to_events(_function_tool_span("00f067aa0ba902b7", "a"), "run", CONFIG)
    again = span_to_events(_function_tool_span("00f067aa0ba902b8", "a"), "run", CONFIG)
    other = span_to_events(_function_tool_span("00f067aa0ba902b9", "b"), "run", CONFIG)
    assert first[0].signature == again[0].signature != other[0].signature
    assert first[1].signature == again[1].signature


def test_a_tool_output_with_is_error_is_a_failure_with_its_text() -> None:
    _call, outcome = span_to_events(
        _function_tool_span("00f067aa0ba902b7", "a", error=True), "run", CONFIG
    )
    assert outcome.kind is EventKind.TOOL_ERROR
    assert outcome.error is not None and outcome.error.message == "Error: index offline"


def test_without_content_the_span_is_a_call_of_unknown_arguments() -> None:
    call, _result = span_to_events(
        _function_tool_span("00f067aa0ba902b7", "a", content=False), "run", CONFIG
    )
    assert call.tool_name == "FunctionTool.task"
    assert call.details["content_recorded"] is False


def test_other_task_spans_are_not_tools() -> None:
    attributes = {"traceloop.span.kind": "task", "traceloop.entity.name": "BaseWorkflowAgent.task"}
    assert classify_parts("BaseWorkflowAgent.task", attributes) is OTHER


def test_bound_arguments_are_unwrapped_to_what_the_function_got() -> None:
    assert unwrap_arguments({"args": [], "kwargs": {"q": "x"}}) == ({"q": "x"}, None)
    assert unwrap_arguments({"kwargs": {"q": "x"}}) == ({"q": "x"}, None)
    assert unwrap_arguments({"args": ["x"], "kwargs": {}}) == (["x"], None)
    both = {"args": ["x"], "kwargs": {"limit": 3}}
    assert unwrap_arguments(both) == (both, None)
    own = {"kwargs": {"q": "x"}, "verbose": True}  # a tool's own argument named kwargs
    assert unwrap_arguments(own) == (own, None)


def _langfuse(name: str, kind: str, span_id: str, **more: str) -> SpanView:
    attributes = {"langfuse.observation.type": kind, **more}
    return SpanView(name, TRACE, span_id, attributes=attributes)


def test_langfuse_observations_are_classified_by_their_type() -> None:
    for kind, expected in (("agent", AGENT), ("tool", TOOL), ("generation", LLM), ("span", OTHER)):
        assert classify_parts("x", {"langfuse.observation.type": kind}) is expected


def test_a_langfuse_tool_observation_is_a_call_of_its_function() -> None:
    view = _langfuse(
        "search",
        "tool",
        "00f067aa0ba902b7",
        **{
            "langfuse.observation.input": json.dumps({"args": [], "kwargs": {"query": "x"}}),
            "langfuse.observation.output": "no results",
        },
    )
    call, result = span_to_events(view, "run", CONFIG)
    assert (call.tool_name, call.arguments, result.output) == (
        "search",
        {"query": "x"},
        "no results",
    )


def test_a_langfuse_generation_counts_its_usage_details() -> None:
    view = _langfuse(
        "model",
        "generation",
        "00f067aa0ba902b7",
        **{
            "langfuse.observation.model.name": "scripted-gpt",
            "langfuse.observation.usage_details": json.dumps({"input": 40, "output": 10}),
        },
    )
    (event,) = span_to_events(view, "run", CONFIG)
    assert (event.kind, event.model, event.input_tokens, event.output_tokens) == (
        EventKind.LLM_RESPONSE,
        "scripted-gpt",
        40,
        10,
    )


def test_a_langfuse_input_on_a_generation_is_no_tool_argument() -> None:
    """``langfuse.observation.input`` is on every observation: read only on a tool."""
    view = _langfuse(
        "model",
        "generation",
        "00f067aa0ba902b7",
        **{"langfuse.observation.input": json.dumps({"args": [0], "kwargs": {}})},
    )
    (event,) = span_to_events(view, "run", CONFIG)
    assert event.kind is EventKind.LLM_RESPONSE and event.arguments is None
