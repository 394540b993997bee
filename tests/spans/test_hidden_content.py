"""Hidden-content placeholders mean "not recorded", and OpenInference's LangChain tool result
is the content of the ToolMessage it wraps (issue 17, points 2 and 3).

The attribute values are the ones openinference-instrumentation-langchain 0.1.80 writes (its
``OPENINFERENCE_HIDE_INPUTS`` / ``_OUTPUTS`` / ``_OUTPUT_TEXT`` put ``__REDACTED__`` in place
of the content); compat/openinference-langchain drives the real instrumentation.
"""

from __future__ import annotations

import json

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.events import EventKind
from otel_loopguard.engine.monitor import Monitor
from otel_loopguard.spans.events import span_to_events
from otel_loopguard.spans.view import SpanView

CONFIG = LoopGuardConfig()
TRACE = "0af7651916cd43dd8448eb211c80319c"
REDACTED = "__REDACTED__"


def _tool_span(index: int, arguments: str, output: str) -> SpanView:
    return SpanView(
        "lookup",
        TRACE,
        f"{index:016x}",
        attributes={
            "openinference.span.kind": "TOOL",
            "tool.name": "lookup",
            "input.value": arguments,
            "output.value": output,
        },
    )


def _tool_message(content: str, call_id: str, status: str = "success") -> str:
    """``output.value`` of OpenInference's LangChain tool span: the whole ToolMessage."""
    data = {
        "content": content,
        "additional_kwargs": {},
        "response_metadata": {},
        "type": "tool",
        "name": "lookup",
        "id": None,
        "tool_call_id": call_id,
        "artifact": None,
        "status": status,
    }
    return json.dumps({"type": "tool", "data": data})


def _decisions(spans: list[SpanView]) -> list[str]:
    monitor = Monitor(CONFIG)
    actions = []
    for span in spans:
        for event in span_to_events(span, "run", CONFIG):
            actions.append(monitor.observe(event).action.value)
    return actions


def test_redacted_arguments_and_results_are_not_content() -> None:
    # a productive run with inputs and outputs hidden: read as content, the eight calls
    # would be identical calls with identical results, and the run would be stopped
    spans = [_tool_span(i, REDACTED, REDACTED) for i in range(8)]
    call, result = span_to_events(spans[0], "run", CONFIG)
    assert call.details["content_recorded"] is False
    assert result.details["content_recorded"] is False
    assert "stop" not in _decisions(spans)
    assert "warn" not in _decisions(spans)


def test_the_tool_message_is_read_as_its_content() -> None:
    # the same empty result under a new tool_call_id each time: the same output
    spans = [
        _tool_span(i, "pro plan price", _tool_message("no results", f"call_{i}")) for i in range(4)
    ]
    outputs = {span_to_events(span, "run", CONFIG)[1].signature for span in spans}
    assert len(outputs) == 1
    assert span_to_events(spans[0], "run", CONFIG)[1].output == "no results"
    assert "stop" in _decisions(spans)


def test_distinct_tool_messages_stay_distinct() -> None:
    spans = [
        _tool_span(i, topic, _tool_message(f"about {topic}", f"call_{i}"))
        for i, topic in enumerate(("pricing", "limits", "refunds"))
    ]
    assert len({span_to_events(s, "run", CONFIG)[1].signature for s in spans}) == 3


def test_redacted_tool_call_arguments_are_not_identical_steps() -> None:
    def turn(index: int) -> SpanView:
        prefix = "llm.output_messages.0.message."
        call = prefix + "tool_calls.0.tool_call.function."
        return SpanView(
            "ChatModel",
            TRACE,
            f"{index:016x}",
            attributes={
                "openinference.span.kind": "LLM",
                prefix + "role": "assistant",
                call + "name": "lookup",
                call + "arguments": REDACTED,
            },
        )

    signatures = {span_to_events(turn(i), "run", CONFIG)[0].requested_tool_calls for i in range(4)}
    assert len(signatures) == 4
    assert "warn" not in _decisions([turn(i) for i in range(4)])


def test_a_tool_message_with_error_status_is_a_tool_error() -> None:
    """LangGraph's ``ToolNode(handle_tool_errors=True)`` hands a tool's exception to the model
    as a ToolMessage with ``status="error"``: a failure, so the same permission error twice
    is a permanent failure."""
    text = "Error: PermissionError('403 permission denied: /admin')\\n Please fix your mistakes."
    spans = [
        _tool_span(i, "/admin", _tool_message(text, f"call_{i}", status="error")) for i in range(3)
    ]
    _call, outcome = span_to_events(spans[0], "run", CONFIG)
    assert outcome.kind is EventKind.TOOL_ERROR
    assert "permission denied" in (outcome.error.message or "")
    assert "stop" in _decisions(spans)
