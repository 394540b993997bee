"""LangGraph runs under the instrumentation: looping, productive, nested, observe vs enforce."""

from __future__ import annotations

import pytest
from agents import (
    RUN_CONFIG,
    USER_INPUT,
    ToolCounter,
    build_handoff_graph,
    build_parent_graph,
    build_prebuilt_agent,
    build_react_graph,
    final_answer,
    looping_script,
    productive_script,
    tool_message_contents,
)
from otel_loopguard_testing import agent_checks as checks

from otel_loopguard import LoopGuardInterrupt

MAX_EXECUTIONS = 4


def test_looping_run_is_interrupted_in_enforce_mode(make_loopguard):
    guard = make_loopguard(mode="enforce")
    counter = ToolCounter()
    graph = build_react_graph(looping_script(), counter)

    with pytest.raises(LoopGuardInterrupt) as raised:
        graph.invoke(USER_INPUT, RUN_CONFIG)

    checks.assert_loop_interrupted(guard, counter["search"], raised, agent="support_agent")
    tools = guard.tool_spans("search")
    assert len(tools) == counter["search"] + guard.vetoed_calls(tools)
    stopped = [s for s in tools if guard.decisions_on(s, "stop")]
    assert stopped, "the STOP decision is recorded on the tool span where it was decided"


async def test_looping_run_is_interrupted_async(make_loopguard):
    guard = make_loopguard(mode="enforce")
    counter = ToolCounter()
    graph = build_react_graph(looping_script(), counter)

    with pytest.raises(LoopGuardInterrupt):
        await graph.ainvoke(USER_INPUT, RUN_CONFIG)

    checks.assert_loop_interrupted(guard, counter["search"], agent="support_agent")


def test_observe_mode_runs_to_the_end_with_the_stop_decision_recorded(make_loopguard):
    baseline_counter = ToolCounter()
    baseline = build_react_graph(looping_script(give_up_after=8), baseline_counter).invoke(
        USER_INPUT, RUN_CONFIG
    )

    guard = make_loopguard(mode="observe")
    counter = ToolCounter()
    result = build_react_graph(looping_script(give_up_after=8), counter).invoke(
        USER_INPUT, RUN_CONFIG
    )

    assert final_answer(result) == final_answer(baseline)
    assert counter["search"] == baseline_counter["search"] == 8
    tools = guard.tool_spans("search")
    assert len(tools) == 8
    assert any(guard.decisions_on(s, "stop") for s in tools)
    (agent,) = guard.agent_spans()
    assert guard.decisions_on(agent, "stop") or agent.attributes["loopguard.run.state"]
    guard.assert_every_span_ended_once()


def test_productive_run_is_untouched_in_enforce_mode(make_loopguard):
    baseline_counter = ToolCounter()
    baseline = build_react_graph(productive_script(), baseline_counter).invoke(
        USER_INPUT, RUN_CONFIG
    )

    guard = make_loopguard(mode="enforce")
    counter = ToolCounter()
    result = build_react_graph(productive_script(), counter).invoke(USER_INPUT, RUN_CONFIG)

    assert final_answer(result) == final_answer(baseline)
    assert tool_message_contents(result) == tool_message_contents(baseline)
    assert counter.calls == baseline_counter.calls == {"lookup": 3}
    checks.assert_completed_without_stop(guard)


def test_spans_follow_the_genai_conventions(make_loopguard):
    guard = make_loopguard(mode="enforce")
    build_react_graph(productive_script(), ToolCounter()).invoke(USER_INPUT, RUN_CONFIG)

    (agent,) = guard.agent_spans()
    assert agent.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert agent.attributes["gen_ai.agent.name"] == "support_agent"
    tools = guard.tool_spans("lookup")
    call_ids = sorted(s.attributes["gen_ai.tool.call.id"] for s in tools)
    assert call_ids == ["call_0", "call_1", "call_2"]
    for span in tools:
        assert span.name == "execute_tool lookup"
        assert span.attributes["gen_ai.operation.name"] == "execute_tool"
        assert span.attributes["gen_ai.tool.name"] == "lookup"
        assert span.attributes["gen_ai.tool.type"] == "function"
        assert (
            span.attributes["gen_ai.tool.description"]
            == "Look up one topic in the product catalog."
        )
        assert span.parent is not None and span.parent.span_id == agent.context.span_id
        # content capture is off by default: no argument or result leaves the process
        assert "gen_ai.tool.call.arguments" not in span.attributes
        assert "gen_ai.tool.call.result" not in span.attributes


def test_nested_subgraph_makes_one_agent_span_and_is_stopped(make_loopguard):
    guard = make_loopguard(mode="enforce")
    counter = ToolCounter()
    graph = build_parent_graph(looping_script(), counter)

    with pytest.raises(LoopGuardInterrupt):
        graph.invoke(USER_INPUT, RUN_CONFIG)

    assert 1 <= counter["search"] <= MAX_EXECUTIONS
    (agent,) = guard.agent_spans()
    assert agent.name == "invoke_agent orchestrator"
    for span in guard.tool_spans("search"):
        assert span.context.trace_id == agent.context.trace_id
        assert span.attributes.get("gen_ai.agent.name") == "researcher"
    guard.assert_every_span_ended_once()


def test_thread_id_is_the_conversation_id(make_loopguard):
    guard = make_loopguard(mode="enforce")
    build_react_graph(productive_script(), ToolCounter()).invoke(
        USER_INPUT, {**RUN_CONFIG, "configurable": {"thread_id": "thread-42"}}
    )
    (agent,) = guard.agent_spans()
    assert agent.attributes["gen_ai.conversation.id"] == "thread-42"


def test_handoff_ping_pong_between_agents_is_stopped(make_loopguard):
    guard = make_loopguard(mode="enforce")
    counter = ToolCounter()

    with pytest.raises(LoopGuardInterrupt) as raised:
        build_handoff_graph(counter).invoke(USER_INPUT, RUN_CONFIG)

    assert "handoff_cycle" in raised.value.decision.detectors
    # alice -> bob -> alice -> bob -> alice: two closed cycles at most
    assert counter["transfer_to_bob"] + counter["transfer_to_alice"] <= 4
    handoffs = guard.tool_spans()
    assert {s.attributes["gen_ai.agent.name"] for s in handoffs} == {"alice", "bob"}
    (agent,) = guard.agent_spans()
    assert agent.name == "invoke_agent swarm"
    guard.assert_every_span_ended_once()


class _Opaque:
    """A tool result that refuses every attribute lookup (a proxy to a closed resource)."""

    def __getattr__(self, name):
        raise RuntimeError("closed")


def test_our_bookkeeping_errors_never_reach_the_caller(make_loopguard):
    from langchain_core.tools import tool

    guard = make_loopguard(mode="enforce")
    opaque = _Opaque()

    @tool
    def fetch(key: str) -> object:
        """Fetch a handle."""
        return opaque

    assert fetch.invoke({"key": "a"}) is opaque
    (span,) = guard.tool_spans("fetch")
    assert "error.type" not in span.attributes
    guard.assert_every_span_ended_once()


def test_prebuilt_react_agent_is_interrupted(make_loopguard):
    guard = make_loopguard(mode="enforce")
    counter = ToolCounter()

    with pytest.raises(LoopGuardInterrupt):
        build_prebuilt_agent(looping_script(), counter).invoke(USER_INPUT, RUN_CONFIG)

    assert 1 <= counter["search"] <= MAX_EXECUTIONS
    (agent,) = guard.agent_spans()
    assert agent.name == "invoke_agent prebuilt_agent"
    guard.assert_every_span_ended_once()
