"""An MCP client talking to a real in-process ``MCPServer`` (the SDK's in-memory transport)."""

from __future__ import annotations

import anyio
import pytest
from kb_server import build_server
from mcp import Client
from opentelemetry.trace import StatusCode
from scripted_agent import (
    FAILING_PLAN,
    LOOP_STEPS,
    LOOPING_PLAN,
    PRODUCTIVE_PLAN,
    run_to_the_end,
)

from otel_loopguard import LoopGuardInterrupt

MAX_EXECUTIONS = 4


def _run(plan, harness) -> tuple[str, list[str]]:
    """Run the plan against a fresh server; re-raise what the agent run's caller received."""
    executions: list[str] = []
    server = build_server(executions)
    tracer = harness.provider.get_tracer("test-agent")
    harness.last_executions = executions

    outcome = run_to_the_end(server, plan, tracer)
    if isinstance(outcome, LoopGuardInterrupt):
        raise outcome
    return outcome, executions


def test_looping_run_is_interrupted_in_enforce_mode(loopguard):
    with pytest.raises(LoopGuardInterrupt) as raised:
        _run(LOOPING_PLAN, loopguard)

    executions = loopguard.last_executions
    assert 1 <= len(executions) <= MAX_EXECUTIONS
    assert raised.value.decision.action.value == "stop"
    assert len(loopguard.executed_tool_spans("search")) == len(executions)
    assert loopguard.decision_events("stop")
    assert loopguard.run_state("researcher") == "stopped"
    loopguard.assert_every_span_ended_once()


def test_looping_run_in_observe_mode_runs_to_its_end(observe_loopguard):
    answer, executions = _run(LOOPING_PLAN, observe_loopguard)

    assert answer == "answer: no results"
    assert len(executions) == LOOP_STEPS
    assert len(observe_loopguard.tool_spans("search")) == LOOP_STEPS
    assert observe_loopguard.decision_events("stop")
    observe_loopguard.assert_every_span_ended_once()


def test_productive_run_completes_untouched(loopguard):
    loopguard.uninstrument()
    baseline, baseline_executions = _run(PRODUCTIVE_PLAN, loopguard)
    assert loopguard.tool_spans("search") == []  # uninstrumented: the calls are not ours
    loopguard.reinstrument()

    answer, executions = _run(PRODUCTIVE_PLAN, loopguard)

    assert baseline == "answer: all prices in EUR"
    assert answer == baseline
    assert executions == baseline_executions
    assert loopguard.decision_events("stop") == []
    loopguard.assert_every_span_ended_once()


def test_spans_follow_the_genai_conventions(loopguard):
    _answer, executions = _run(PRODUCTIVE_PLAN, loopguard)

    (agent_span,) = loopguard.named("invoke_agent researcher")
    tool_spans = loopguard.tool_spans("search")
    assert len(tool_spans) == len(executions) == 4
    for span in tool_spans:
        assert span.parent is not None and span.parent.span_id == agent_span.context.span_id
        assert span.attributes["gen_ai.operation.name"] == "execute_tool"
        assert span.attributes["gen_ai.tool.name"] == "search"
        assert "gen_ai.tool.call.arguments" not in span.attributes
        assert "gen_ai.tool.call.result" not in span.attributes
        assert span.status.status_code is not StatusCode.ERROR


def test_a_failing_server_tool_is_a_tool_error_and_repeats_are_stopped(loopguard):
    with pytest.raises(LoopGuardInterrupt) as raised:
        _run(FAILING_PLAN, loopguard)

    assert 1 <= len(loopguard.last_executions) <= MAX_EXECUTIONS
    fetch_spans = loopguard.executed_tool_spans("fetch")
    assert fetch_spans
    for span in fetch_spans:
        assert span.attributes["error.type"] == "tool_error"
        assert span.status.status_code is StatusCode.ERROR
    assert "permanent_failure" in raised.value.decision.detectors


def test_inside_another_frameworks_tool_span_no_second_span_is_made(loopguard):
    """An agent framework that exposes an MCP tool as its own tool already reports the
    execution: the MCP call inside it gets no span of ours, and a stopped run is vetoed."""
    executions: list[str] = []
    server = build_server(executions)
    tracer = loopguard.provider.get_tracer("some-framework")
    guard = loopguard.guard

    async def main() -> int:
        interrupts = 0
        async with Client(server) as client:
            with guard.agent_run(tracer, "researcher"):
                for _ in range(LOOP_STEPS):
                    try:
                        with guard.tool_call(tracer, "kb_search", {"query": "pricing"}) as call:
                            result = await client.call_tool("search", {"query": "pricing"})
                            call.set_result(result.structured_content)
                    except LoopGuardInterrupt:
                        interrupts += 1
        return interrupts

    interrupts = anyio.run(main)

    assert loopguard.tool_spans("search") == []
    assert 1 <= len(executions) <= MAX_EXECUTIONS
    assert interrupts == LOOP_STEPS - len(executions) + 1
    loopguard.assert_every_span_ended_once()


def test_inside_a_foreign_tool_span_no_second_span_is_made(loopguard):
    """An OpenInference-instrumented framework's tool span around the MCP call."""
    executions: list[str] = []
    server = build_server(executions)
    tracer = loopguard.provider.get_tracer("openinference-framework")

    async def main() -> str:
        async with Client(server) as client:
            with tracer.start_as_current_span(
                "kb_search", attributes={"openinference.span.kind": "TOOL", "tool.name": "kb"}
            ):
                result = await client.call_tool("search", {"query": "currency"})
        return result.content[0].text

    assert anyio.run(main) == "all prices in EUR"
    assert executions == ["search:currency"]
    assert loopguard.tool_spans("search") == []
    assert [span.name for span in loopguard.spans()] == ["kb_search"]
