"""End-to-end runs of real OpenAI Agents SDK agents (ScriptedModel, no network)."""

from __future__ import annotations

import asyncio
import json

import pytest
from agents import Agent, Runner
from agents.testing import ScriptedModel, assistant_message, function_call
from opentelemetry.trace import StatusCode
from otel_loopguard_testing import agent_checks as checks
from scripted_agents import (
    FINAL_ANSWER,
    LOOP_STEPS,
    failing_agent,
    looping_agent,
    ping_pong_agents,
    productive_agent,
    search_tool,
)

from otel_loopguard import LoopGuardInterrupt

MAX_EXECUTIONS = 4


def test_looping_run_is_interrupted_in_enforce_mode(loopguard):
    scenario = looping_agent()

    with pytest.raises(LoopGuardInterrupt) as raised:
        asyncio.run(Runner.run(scenario.agent, "What does it cost?"))

    checks.assert_loop_interrupted(loopguard, len(scenario.executions), raised)


def test_run_sync_is_interrupted_too(loopguard):
    scenario = looping_agent()

    with pytest.raises(LoopGuardInterrupt):
        Runner.run_sync(scenario.agent, "What does it cost?")

    assert 1 <= len(scenario.executions) <= MAX_EXECUTIONS
    loopguard.assert_every_span_ended_once()


def test_looping_run_in_observe_mode_runs_to_its_end(observe_loopguard):
    scenario = looping_agent()

    result = asyncio.run(Runner.run(scenario.agent, "What does it cost?"))

    assert result.final_output == "I could not find anything."
    assert len(scenario.executions) == LOOP_STEPS
    assert len(observe_loopguard.tool_spans("search")) == LOOP_STEPS
    stops = observe_loopguard.decision_events("stop")
    assert stops, "observe mode still records the STOP decision"
    assert all(span.name.startswith(("execute_tool", "invoke_agent")) for span, _ in stops)
    observe_loopguard.assert_every_span_ended_once()


def test_productive_run_completes_untouched(loopguard):
    loopguard_off = productive_agent()
    baseline = loopguard.baseline(
        lambda: asyncio.run(Runner.run(loopguard_off.agent, "What does it cost?")).final_output
    )

    scenario = productive_agent()
    result = asyncio.run(Runner.run(scenario.agent, "What does it cost?"))

    assert baseline == FINAL_ANSWER
    assert result.final_output == baseline
    assert scenario.executions == loopguard_off.executions
    assert loopguard.decision_events("stop") == []
    loopguard.assert_every_span_ended_once()


def test_spans_follow_the_genai_conventions(loopguard):
    scenario = productive_agent()
    asyncio.run(Runner.run(scenario.agent, "What does it cost?"))

    tool_spans = checks.assert_genai_agent_and_tool_spans(loopguard, scenario.executions)
    call_ids = {span.attributes["gen_ai.tool.call.id"] for span in tool_spans}
    assert call_ids == {f"call_{i}" for i in range(4)}


def test_streamed_looping_run_is_interrupted_and_leaves_no_span_open(loopguard):
    scenario = looping_agent()

    async def consume() -> int:
        streamed = Runner.run_streamed(scenario.agent, "What does it cost?")
        seen = 0
        async for _event in streamed.stream_events():
            seen += 1
        return seen

    with pytest.raises(LoopGuardInterrupt):
        asyncio.run(consume())

    checks.assert_loop_interrupted(loopguard, len(scenario.executions))


def test_streamed_run_cancelled_by_the_consumer_ends_its_spans(loopguard):
    scenario = productive_agent()

    async def consume_one_then_cancel() -> None:
        streamed = Runner.run_streamed(scenario.agent, "What does it cost?")
        async for _event in streamed.stream_events():
            streamed.cancel()
            break
        # let the cancelled background task unwind
        if streamed.run_loop_task is not None:
            await asyncio.gather(streamed.run_loop_task, return_exceptions=True)

    asyncio.run(consume_one_then_cancel())

    assert loopguard.run_state("researcher") == "cancelled"
    loopguard.assert_every_span_ended_once()


def test_streamed_productive_run_gives_the_same_answer(loopguard):
    scenario = productive_agent()

    async def consume() -> str:
        streamed = Runner.run_streamed(scenario.agent, "What does it cost?")
        async for _event in streamed.stream_events():
            pass
        return streamed.final_output

    assert asyncio.run(consume()) == FINAL_ANSWER
    assert len(loopguard.tool_spans("search")) == 4
    loopguard.assert_every_span_ended_once()


def test_handoff_ping_pong_is_stopped(loopguard):
    triage, _billing = ping_pong_agents(rounds=8)

    with pytest.raises(LoopGuardInterrupt) as raised:
        asyncio.run(Runner.run(triage, "I have a billing question"))

    assert "handoff_cycle" in raised.value.decision.detectors
    handoff_spans = [s for s in loopguard.spans() if s.name.startswith("execute_tool transfer_to_")]
    assert len(handoff_spans) < 8
    loopguard.assert_every_span_ended_once()


def test_a_failing_tool_body_is_an_error_span_and_repeats_are_stopped(loopguard):
    scenario = failing_agent()

    with pytest.raises(LoopGuardInterrupt) as raised:
        asyncio.run(Runner.run(scenario.agent, "Read the admin page"))

    assert 1 <= len(scenario.executions) <= MAX_EXECUTIONS
    spans = loopguard.executed_tool_spans("fetch")
    assert len(spans) == len(scenario.executions)
    for span in spans:
        assert span.attributes["error.type"] == "PermissionError"
        assert span.status.status_code is StatusCode.ERROR
    assert "permanent_failure" in raised.value.decision.detectors


def test_content_capture_exports_the_arguments_and_results_when_asked(make_loopguard):
    harness = make_loopguard(capture_content=True)
    asyncio.run(Runner.run(productive_agent().agent, "What does it cost?"))
    first = harness.tool_spans("search")[0]

    assert json.loads(first.attributes["gen_ai.tool.call.arguments"]) == {"query": "pricing page"}
    assert first.attributes["gen_ai.tool.call.result"] == "pricing: see /pricing"


def test_parallel_identical_calls_in_one_turn_are_stopped(loopguard):
    """Two identical calls per model turn run concurrently; the interrupt still wins."""
    executions: list[str] = []
    search = search_tool(executions)
    script = [
        [
            function_call("search", {"query": "pricing"}, call_id=f"call_{i}a"),
            function_call("search", {"query": "pricing"}, call_id=f"call_{i}b"),
        ]
        for i in range(LOOP_STEPS)
    ]
    script.append([assistant_message("nothing")])
    agent = Agent(name="researcher", tools=[search], model=ScriptedModel(script))

    with pytest.raises(LoopGuardInterrupt):
        asyncio.run(Runner.run(agent, "What does it cost?"))

    assert 1 <= len(executions) <= MAX_EXECUTIONS
    loopguard.assert_every_span_ended_once()
