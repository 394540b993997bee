"""Premature end read from GenAI semconv ``chat`` spans (issue 18, point 8), on-line and in
replay: finish reason ``stop`` with an assistant message that has no parts, or zero output
tokens, after failing tool calls, is the premature-end ``replan``; our SDK wrappers were
the only ones to report it before.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode
from sdk_stack import AGENT, SdkStack, chat_span, sdk_stack, tool_span

from otel_loopguard.analyze.readers import read_spans
from otel_loopguard.analyze.replay import Replayer, RunRecord
from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.spans.otlp_json import spans_to_otlp_json

NO_PARTS = json.dumps([{"role": "assistant", "parts": [], "finish_reason": "stop"}])


class FetchFailed(Exception):
    pass


def failed_fetch(stack: SdkStack) -> None:
    """A tool span failed as instrumentations record it: the exception, status ERROR."""
    attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "fetch"}
    try:
        with stack.tracer.start_as_current_span("execute_tool fetch", attributes=attributes):
            raise FetchFailed("connection refused by example.invalid")
    except FetchFailed:
        pass


def no_parts(stack: SdkStack) -> None:
    chat_span(stack, "stop", output_tokens=12, output_messages=NO_PARTS)


def zero_tokens(stack: SdkStack) -> None:
    chat_span(stack, "stop", input_tokens=900, output_tokens=0)


def run_agent(stack: SdkStack, tool: Callable[[SdkStack], None], end: Callable) -> None:
    with stack.tracer.start_as_current_span("invoke_agent writer", attributes=AGENT):
        chat_span(stack, "tool_calls", output_tokens=20)
        tool(stack)
        end(stack)
    stack.provider.shutdown()


def premature(decisions: list[dict]) -> list[dict]:
    return [d for d in decisions if "premature_end" in d["loopguard.detectors"]]


@pytest.mark.parametrize("end", [no_parts, zero_tokens], ids=["no parts", "zero tokens"])
def test_an_empty_stop_after_a_failed_tool_span_gets_the_replan(end: Callable) -> None:
    stack = sdk_stack()
    run_agent(stack, failed_fetch, end)
    (decision,) = premature(stack.decisions())
    assert decision["loopguard.action"] == "replan"
    assert "fetch: FetchFailed" in decision["loopguard.recommendation"]


@pytest.mark.parametrize("end", [no_parts, zero_tokens], ids=["no parts", "zero tokens"])
def test_an_empty_stop_after_tools_that_worked_is_a_normal_end(end: Callable) -> None:
    stack = sdk_stack()
    ok = lambda s: tool_span(s, "fetch", '{"url": "x"}', "<html>ok</html>")  # noqa: E731
    run_agent(stack, ok, end)
    assert stack.decisions() == []


def test_an_answer_with_tokens_but_no_recorded_content_is_not_taken_for_empty() -> None:
    stack = sdk_stack()
    run_agent(stack, failed_fetch, lambda s: chat_span(s, "stop", output_tokens=40))
    assert premature(stack.decisions()) == []


def test_a_failed_model_call_is_not_an_empty_answer() -> None:
    stack = sdk_stack()

    def failed_call(stack: SdkStack) -> None:
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.usage.output_tokens": 0,
            "error.type": "InternalServerError",
        }
        with stack.tracer.start_as_current_span("chat gpt-4o", attributes=attributes) as span:
            span.set_status(Status(StatusCode.ERROR, "500"))

    run_agent(stack, failed_fetch, failed_call)
    assert premature(stack.decisions()) == []


def _recorded(end: Callable) -> list:
    """The same agent run under a plain SDK pipeline (no loopguard): what a trace holds."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    stack = SdkStack(provider, exporter, provider.get_tracer("tests.recorded"))
    run_agent(stack, failed_fetch, end)
    return list(exporter.get_finished_spans())


@pytest.mark.parametrize("end", [no_parts, zero_tokens], ids=["no parts", "zero tokens"])
def test_replay_of_the_saved_trace_gives_the_same_replan(tmp_path: Path, end: Callable) -> None:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(spans_to_otlp_json(_recorded(end))))
    runs: list[RunRecord] = []
    replayer = Replayer(LoopGuardConfig(), runs.append)
    replayer.feed(read_spans([str(path)]))
    replayer.finish()
    (run,) = runs
    (decision,) = [d for d in run.decisions if "premature_end" in d.detectors]
    assert decision.action.value == "replan"
    assert decision.recommendation and "fetch: FetchFailed" in decision.recommendation
