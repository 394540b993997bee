"""A hand-written loop traced by a model-call instrumentation alone (issue 17, point 5).

The official ``opentelemetry-instrumentation-openai-v2`` makes only ``chat`` spans; the
tools are the application's code. With content capture on, the next request's
``gen_ai.input.messages`` holds the call (``tool_call``) and what the tool returned
(``tool_call_response``). The spans here carry what that instrumentation writes (captured
from 2.4b0; compat/openai-v2 drives the real one): read as executions, the default policy
stops a loop of the same call returning the same empty result, and a productive loop
is left alone. Where a trace has tool spans, they report the executions and the request's
answers are not read again.
"""

from __future__ import annotations

import json
from pathlib import Path

from analyze.traces import batches, jsonl_text

from otel_loopguard.analyze.readers import read_spans
from otel_loopguard.analyze.replay import Replayer, RunRecord
from otel_loopguard.engine.config import LoopGuardConfig

from .helpers import Stack

TURNS = 8


def _chat(tracer, messages: list[dict], turn: int, output: list[dict]) -> None:
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-test",
        "gen_ai.response.id": f"chatcmpl-{turn}",
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 5,
        "gen_ai.input.messages": json.dumps(messages),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": output}]),
    }
    with tracer.start_as_current_span("chat gpt-test", attributes=attributes):
        pass


def hand_written_loop(tracer, answer, queries: list[str], *, tool_spans: bool = False) -> None:
    """``len(queries)`` turns asking ``search(query)``, the tool answering ``answer(query)``,
    then a final answer; ``tool_spans``: the application also traces its tool calls."""
    messages: list[dict] = [{"role": "user", "parts": [{"type": "text", "content": "price?"}]}]
    with tracer.start_as_current_span("handle request"):
        for turn, query in enumerate(queries):
            call = {
                "type": "tool_call",
                "id": f"call_{turn}",
                "name": "search",
                "arguments": {"query": query},
            }
            _chat(tracer, messages, turn, [call])
            result = answer(query)
            if tool_spans:
                with tracer.start_as_current_span(
                    "execute_tool search",
                    attributes={
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": "search",
                        "gen_ai.tool.call.id": f"call_{turn}",
                    },
                ):
                    pass
            messages.append({"role": "assistant", "parts": [call]})
            part = {"type": "tool_call_response", "id": f"call_{turn}", "response": result}
            messages.append({"role": "tool", "parts": [part]})
        _chat(tracer, messages, len(queries), [{"type": "text", "content": "done"}])


def _stops(stack: Stack) -> list:
    return [e for _span, e in stack.decision_events() if e.attributes["loopguard.action"] == "stop"]


def _chat_spans_before(stack: Stack, event) -> int:
    return sum(1 for s in stack.spans("chat gpt-test") if s.end_time <= event.timestamp)


def test_a_loop_seen_only_in_requests_is_stopped_on_no_progress(stack: Stack) -> None:
    hand_written_loop(stack.tracer, lambda q: "no results", ["pricing"] * TURNS)

    stops = _stops(stack)
    assert stops, "the same call returning the same empty result was not stopped"
    first = stops[0]
    assert "no_progress" in first.attributes["loopguard.detectors"]
    # the results of the first three calls are in the 2nd..4th requests
    assert _chat_spans_before(stack, first) <= 4


def test_a_productive_loop_seen_only_in_requests_is_not_stopped(stack: Stack) -> None:
    queries = ["pricing page", "/pricing", "team plan price", "currency"]
    hand_written_loop(stack.tracer, lambda q: f"found {q}", queries)

    assert _stops(stack) == []


def test_with_tool_spans_the_requests_answers_are_not_read_again(stack: Stack) -> None:
    """The tool spans (no content) report each execution; the same answers read from the
    requests would be each execution again, and identical: a false loop."""
    hand_written_loop(stack.tracer, lambda q: "no results", ["pricing"] * 3, tool_spans=True)

    assert _stops(stack) == []


def test_replay_reads_the_requests_answers_alike(stack: Stack, tmp_path: Path) -> None:
    hand_written_loop(stack.tracer, lambda q: "no results", ["pricing"] * TURNS)
    online = [e.attributes["loopguard.action"] for _span, e in stack.decision_events()]
    path = tmp_path / "export.jsonl"
    path.write_text(jsonl_text(batches(list(stack.exporter.get_finished_spans()), 5)))

    runs: list[RunRecord] = []
    replayer = Replayer(LoopGuardConfig(), runs.append)
    replayer.feed(read_spans([str(path)]))
    replayer.finish()

    replayed = [d.action.value for run in runs for d in run.decisions]
    assert "stop" in online
    assert replayed == online


def test_a_request_sent_again_is_not_its_answers_again(stack: Stack) -> None:
    """The application retries the same request (its own retry after a failure): the tool
    answers it carries were read once; read on every retry they would be a loop."""
    messages = [
        {"role": "user", "parts": [{"type": "text", "content": "price?"}]},
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "c1", "name": "search", "arguments": {"q": "x"}}],
        },
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": ""}]},
    ]
    with stack.tracer.start_as_current_span("handle request"):
        for attempt in range(4):
            _chat(stack.tracer, messages, attempt, [{"type": "text", "content": f"try {attempt}"}])

    assert _stops(stack) == []
    detectors = [e.attributes["loopguard.detectors"] for _s, e in stack.decision_events()]
    assert not [d for d in detectors if "repetition" in d or "no_progress" in d]
