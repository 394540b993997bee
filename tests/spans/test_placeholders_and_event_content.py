"""Hidden-content placeholders of every instrumentation, and content carried in span events
(issue 29, points 2 and 3), on real SDK spans through the real span processor.

* A placeholder written in place of content (Strands' ``[REDACTED]``, OpenInference's
  ``__REDACTED__``, ``<redacted>``, ...) means "not recorded": a productive run whose
  content is hidden gets no false STOP.
* Strands' default conventions (no ``gen_ai_latest_experimental`` opt-in) put a tool's input
  in a ``gen_ai.tool.message`` event (``content``) and its output in a ``gen_ai.choice``
  event (``message``) on the tool span, as the older GenAI conventions did: read from there
  when the attributes are missing, so a looping Strands run is stopped with the core alone.

The span shapes are those Strands' tracer writes (``strands/telemetry/tracer.py``:
``start_tool_call_span`` / ``end_tool_call_span``): ``execute_tool <name>`` with
``gen_ai.operation.name``, ``gen_ai.tool.name``, ``gen_ai.tool.call.id``, and the events.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from otel.helpers import Stack, make_stack

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.events import EventKind
from otel_loopguard.guard import set_guard
from otel_loopguard.spans.dialects import COMMON_PLACEHOLDERS, PLACEHOLDERS
from otel_loopguard.spans.events import span_to_events, tool_arguments, tool_output
from otel_loopguard.spans.view import from_readable_span

PLACEHOLDER_SPELLINGS = ["[REDACTED]", "<redacted>", "__REDACTED__", "<REDACTED>", "REDACTED"]


@pytest.fixture
def stack() -> Iterator[Stack]:
    built = make_stack()
    previous = set_guard(built.guard)
    yield built
    set_guard(previous)


def _strands_tool(
    stack: Stack,
    index: int,
    arguments: Any,
    result: Any,
    *,
    in_events: bool = True,
    status: str = "success",
) -> None:
    """One Strands ``execute_tool search`` span: content in its events (default
    conventions), or in the opt-in attributes (``in_events=False``). A ``str`` is written as
    it is (a placeholder), anything else serialized as Strands does."""
    call_id = f"tooluse_{index}"
    arguments_text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    result_text = result if isinstance(result, str) else json.dumps(result)
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.system": "strands-agents",
        "gen_ai.tool.name": "search",
        "gen_ai.tool.call.id": call_id,
    }
    if not in_events:
        attributes["gen_ai.tool.call.arguments"] = arguments_text
    with stack.tracer.start_as_current_span("execute_tool search", attributes=attributes) as span:
        if in_events:
            span.add_event(
                "gen_ai.tool.message",
                {"role": "tool", "content": arguments_text, "id": call_id},
            )
            span.add_event("gen_ai.choice", {"message": result_text, "id": call_id})
        else:
            span.set_attribute("gen_ai.tool.call.result", result_text)
        span.set_attribute("gen_ai.tool.status", status)


def _strands_run(stack: Stack, calls: list[tuple[Any, Any]], **kwargs: Any) -> Any:
    """A Strands agent's ``invoke_agent researcher`` span around one tool span per
    ``(arguments, result)``; the agent span as exported."""
    attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "researcher"}
    with stack.tracer.start_as_current_span("invoke_agent researcher", attributes=attributes):
        for index, (arguments, result) in enumerate(calls):
            _strands_tool(stack, index, arguments, result, **kwargs)
    (agent,) = stack.spans("invoke_agent researcher")
    return agent


def _stops(stack: Stack) -> list[Any]:
    return [e for _, e in stack.decision_events() if e.attributes["loopguard.action"] == "stop"]


def _productive(count: int = 4) -> list[tuple[Any, Any]]:
    return [({"query": f"pricing page {n}"}, [{"text": f"found {n} plans"}]) for n in range(count)]


# -- placeholders ---------------------------------------------------------------------------


def test_every_instrumentations_placeholder_is_in_the_documented_list() -> None:
    assert set(PLACEHOLDER_SPELLINGS) <= PLACEHOLDERS
    assert set(COMMON_PLACEHOLDERS) <= PLACEHOLDERS


@pytest.mark.parametrize("placeholder", PLACEHOLDER_SPELLINGS)
def test_a_placeholder_in_place_of_content_means_not_recorded(
    stack: Stack, placeholder: str
) -> None:
    _strands_run(stack, [(placeholder, placeholder)], in_events=False)
    (span,) = stack.spans("execute_tool search")
    seen = from_readable_span(span)
    assert tool_arguments(seen) is tool_output(seen)  # both the not-recorded marker
    call, result = span_to_events(seen, "run", LoopGuardConfig())
    assert (call.kind, result.kind) == (EventKind.TOOL_CALL, EventKind.TOOL_RESULT)
    assert call.arguments is None and result.output is None
    assert call.details["content_recorded"] is False
    assert result.details["content_recorded"] is False


@pytest.mark.parametrize("placeholder", PLACEHOLDER_SPELLINGS)
@pytest.mark.parametrize("in_events", [False, True], ids=["attributes", "events"])
def test_a_productive_run_with_content_hidden_gets_no_false_stop(
    stack: Stack, placeholder: str, in_events: bool
) -> None:
    """Strands' redaction writes ``[REDACTED]`` for every call's input and output: read as
    content, eight different searches would be one call repeated with one result."""
    agent = _strands_run(stack, [(placeholder, placeholder)] * 8, in_events=in_events)
    assert _stops(stack) == []
    assert agent.attributes.get("loopguard.action") != "stop"
    assert stack.metric_total("loopguard.internal_errors") == 0


# -- content in span events (Strands' default conventions) ------------------------------------


def test_a_tool_spans_input_and_output_are_read_from_its_events(stack: Stack) -> None:
    _strands_run(stack, [({"query": "pricing"}, [{"text": "no results"}])])
    (span,) = stack.spans("execute_tool search")
    assert not any(key.startswith("gen_ai.tool.call.a") for key in span.attributes)
    seen = from_readable_span(span)
    call, result = span_to_events(seen, "run", LoopGuardConfig())
    assert call.arguments == {"query": "pricing"}
    assert result.output == [{"text": "no results"}]
    assert "content_recorded" not in call.details and "content_recorded" not in result.details
    # the same call read from the opt-in attributes signs the same
    opted_in = make_stack()
    _strands_tool(opted_in, 0, {"query": "pricing"}, [{"text": "no results"}], in_events=False)
    (other,) = opted_in.spans("execute_tool search")
    again = span_to_events(from_readable_span(other), "run", LoopGuardConfig())
    assert (again[0].signature, again[1].signature) == (call.signature, result.signature)


def test_the_attributes_win_over_the_events(stack: Stack) -> None:
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "search",
        "gen_ai.tool.call.arguments": '{"query": "from the attribute"}',
        "gen_ai.tool.call.result": "attribute result",
    }
    with stack.tracer.start_as_current_span("execute_tool search", attributes=attributes) as span:
        span.add_event("gen_ai.tool.message", {"content": '{"query": "from the event"}'})
        span.add_event("gen_ai.choice", {"message": "event result"})
    (ended,) = stack.spans("execute_tool search")
    call, result = span_to_events(from_readable_span(ended), "run", LoopGuardConfig())
    assert call.arguments == {"query": "from the attribute"}
    assert result.output == "attribute result"


def test_a_looping_strands_run_is_stopped_core_only_within_the_fourth_call(stack: Stack) -> None:
    for calls in range(1, 5):
        fresh = make_stack()
        set_guard(fresh.guard)
        _strands_run(fresh, [({"query": "pricing"}, [{"text": "no results"}])] * calls)
        if _stops(fresh):
            break
    else:
        pytest.fail("no STOP within the fourth call")
    assert calls <= 4
    (agent,) = fresh.spans("invoke_agent researcher")
    assert agent.attributes["loopguard.action"] == "stop"
    assert "no_progress" in agent.attributes["loopguard.detectors"]
    assert fresh.metric_total("loopguard.internal_errors") == 0


def test_a_productive_strands_run_gets_no_stop(stack: Stack) -> None:
    agent = _strands_run(stack, _productive(6))
    assert _stops(stack) == []
    assert agent.attributes.get("loopguard.action") != "stop"


def test_a_redacted_event_is_not_content(stack: Stack) -> None:
    _strands_run(stack, [("[REDACTED]", "[REDACTED]")])
    (span,) = stack.spans("execute_tool search")
    call, result = span_to_events(from_readable_span(span), "run", LoopGuardConfig())
    assert call.details["content_recorded"] is False
    assert result.details["content_recorded"] is False
