"""LlamaIndex agent workflows under the instrumentation: loops, productive runs, handoffs."""

from __future__ import annotations

import asyncio

import pytest
from agents import (
    USER_MESSAGE,
    ToolCounter,
    build_agent,
    build_handoff_workflow,
    looping_script,
    make_sync_search,
    productive_script,
    run_to_end,
)
from otel_loopguard_testing import agent_checks as checks

from otel_loopguard import LoopGuardInterrupt

MAX_EXECUTIONS = 4


async def test_looping_agent_is_interrupted_in_enforce_mode(make_loopguard):
    guard = make_loopguard(mode="enforce")
    counter = ToolCounter()
    agent = build_agent(looping_script(), counter)

    with pytest.raises(LoopGuardInterrupt) as raised:
        await asyncio.wait_for(run_to_end(agent), timeout=30)

    assert raised.value.decision.action.value == "stop"
    assert 1 <= counter["search"] <= MAX_EXECUTIONS
    tools = guard.tool_spans("search")
    assert len(tools) == counter["search"] + guard.vetoed_calls(tools)
    assert any(guard.decisions_on(s, "stop") for s in tools)
    (run,) = guard.agent_spans()
    assert run.name == "invoke_agent support_agent"
    assert run.attributes["loopguard.run.state"] == "stopped"
    guard.assert_every_span_ended_once()


@pytest.mark.parametrize("streaming_llm", [False, True], ids=["chat", "stream-chat"])
async def test_streamed_looping_agent_is_interrupted(make_loopguard, streaming_llm):
    """``stream_events()`` ends with the framework's failure event; ``await handler`` raises."""
    guard = make_loopguard(mode="enforce")
    counter = ToolCounter()
    agent = build_agent(looping_script(), counter, streaming=streaming_llm)
    handler = agent.run(user_msg=USER_MESSAGE, max_iterations=60)
    seen: list[str] = []

    async def consume() -> None:
        async for event in handler.stream_events():
            seen.append(type(event).__name__)

    await asyncio.wait_for(consume(), timeout=30)
    with pytest.raises(LoopGuardInterrupt):
        await handler

    assert "ToolCallResult" in seen, "the caller received events before the interrupt"
    assert seen[-1] == "WorkflowFailedEvent"
    assert 1 <= counter["search"] <= MAX_EXECUTIONS
    (run,) = guard.agent_spans()
    assert run.attributes["loopguard.run.state"] == "stopped"
    guard.assert_every_span_ended_once()


async def test_observe_mode_runs_to_the_end_with_the_stop_decision_recorded(make_loopguard):
    baseline_counter = ToolCounter()
    baseline = await run_to_end(build_agent(looping_script(give_up_after=8), baseline_counter))

    guard = make_loopguard(mode="observe")
    counter = ToolCounter()
    result = await run_to_end(build_agent(looping_script(give_up_after=8), counter))

    assert str(result) == str(baseline) == "I could not find the price."
    assert counter["search"] == baseline_counter["search"] == 8
    tools = guard.tool_spans("search")
    assert len(tools) == 8
    assert any(guard.decisions_on(s, "stop") for s in tools)
    guard.assert_every_span_ended_once()


@pytest.mark.parametrize("stream", [False, True], ids=["await", "stream-events"])
async def test_productive_run_is_untouched_in_enforce_mode(make_loopguard, stream):
    baseline_counter = ToolCounter()
    baseline = await run_to_end(build_agent(productive_script(), baseline_counter), stream=stream)

    guard = make_loopguard(mode="enforce")
    counter = ToolCounter()
    result = await run_to_end(build_agent(productive_script(), counter), stream=stream)

    assert str(result) == str(baseline)
    assert "Pro plan costs 20 EUR per month" in str(result)
    assert counter.calls == baseline_counter.calls == {"lookup": 3}
    checks.assert_completed_without_stop(guard)


async def test_spans_follow_the_genai_conventions(make_loopguard):
    guard = make_loopguard(mode="enforce")
    await run_to_end(build_agent(productive_script(), ToolCounter()))

    (run,) = guard.agent_spans()
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.agent.name"] == "support_agent"
    call_ids = sorted(s.attributes["gen_ai.tool.call.id"] for s in guard.tool_spans("lookup"))
    assert call_ids == ["call_0", "call_1", "call_2"]
    for span in guard.tool_spans("lookup"):
        assert span.name == "execute_tool lookup"
        assert span.attributes["gen_ai.operation.name"] == "execute_tool"
        assert span.attributes["gen_ai.agent.name"] == "support_agent"
        assert span.attributes["gen_ai.tool.type"] == "function"
        assert "Look up one topic" in span.attributes["gen_ai.tool.description"]
        assert span.context.trace_id == run.context.trace_id
        assert "gen_ai.tool.call.arguments" not in span.attributes
        assert "gen_ai.tool.call.result" not in span.attributes


async def test_handoff_ping_pong_between_agents_is_stopped(make_loopguard):
    guard = make_loopguard(mode="enforce")
    counter = ToolCounter()

    with pytest.raises(LoopGuardInterrupt) as raised:
        await asyncio.wait_for(run_to_end(build_handoff_workflow(counter)), timeout=30)

    assert "handoff_cycle" in raised.value.decision.detectors
    handoffs = guard.tool_spans("handoff")
    assert 1 <= len(handoffs) <= 4
    assert {s.attributes["gen_ai.agent.name"] for s in handoffs} == {"alice", "bob"}
    (run,) = guard.agent_spans()
    assert run.name == "invoke_agent AgentWorkflow"
    assert run.attributes["loopguard.run.state"] == "stopped"
    guard.assert_every_span_ended_once()


def test_tool_called_directly_in_a_hand_written_loop_is_stopped(make_loopguard):
    """The sync path (``FunctionTool.call``) without an agent: one trace is one run."""
    guard = make_loopguard(mode="enforce")
    counter = ToolCounter()
    search = make_sync_search(counter)
    tracer = guard.app_tracer()

    with pytest.raises(LoopGuardInterrupt), tracer.start_as_current_span("my loop"):
        for _ in range(10):
            search.call(query="pro plan price")

    assert 1 <= counter["search"] <= MAX_EXECUTIONS
    assert len(guard.tool_spans("search")) == counter["search"]
    guard.assert_every_span_ended_once()
