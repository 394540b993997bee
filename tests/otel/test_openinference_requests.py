"""A hand-written loop traced by OpenInference's OpenAI instrumentation alone: its model spans
carry the request's messages as ``llm.input_messages.{i}.message.*``, the tools' answers
among them; read as the tools' calls and results, the loop is stopped (issue 17)."""

from __future__ import annotations

import json

from .helpers import Stack


def _request(stack: Stack, turn: int, results: list[str]) -> None:
    """The ``turn``-th request: the user's question, then per earlier turn the assistant's
    call ``search(query="pricing")`` and the tool message answering it."""
    attributes: dict[str, object] = {
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "What does it cost?",
    }
    index = 1
    for number in range(turn):
        prefix = f"llm.input_messages.{index}.message."
        call = prefix + "tool_calls.0.tool_call."
        attributes[prefix + "role"] = "assistant"
        attributes[call + "id"] = f"call_{number}"
        attributes[call + "function.name"] = "search"
        attributes[call + "function.arguments"] = json.dumps({"query": "pricing"})
        tool = f"llm.input_messages.{index + 1}.message."
        attributes[tool + "role"] = "tool"
        attributes[tool + "tool_call_id"] = f"call_{number}"
        attributes[tool + "content"] = results[number]
        index += 2
    with stack.tracer.start_as_current_span("ChatCompletion", attributes=attributes):
        pass


def _stops(stack: Stack) -> list:
    return [e for _, e in stack.decision_events() if e.attributes["loopguard.action"] == "stop"]


def test_the_same_empty_answer_in_the_requests_stops_the_loop(stack: Stack) -> None:
    with stack.tracer.start_as_current_span("agent loop"):
        for turn in range(5):
            _request(stack, turn, ["no results"] * 5)
    (stop, *_) = _stops(stack)
    assert "no_progress" in stop.attributes["loopguard.detectors"]


def test_changing_answers_are_progress(stack: Stack) -> None:
    with stack.tracer.start_as_current_span("agent loop"):
        for turn in range(5):
            _request(stack, turn, [f"page {n}" for n in range(5)])
    assert not _stops(stack)
