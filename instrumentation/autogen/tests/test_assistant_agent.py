"""AssistantAgent end to end: a real agent tool loop driven by a scripted model client."""

from __future__ import annotations

import asyncio

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TaskResult
from autogen_agentchat.messages import ToolCallExecutionEvent
from otel_loopguard_testing import agent_checks as checks
from otel_loopguard_testing import forbidden
from scripted_models import CountingSearch, ScriptedClient, always

from otel_loopguard.engine.decisions import LoopGuardInterrupt

SEARCH_AGAIN = [("search", {"query": "pricing"})]


def looping_agent(search: CountingSearch, iterations: int = 8) -> AssistantAgent:
    """The model asks for the same search on every turn of the agent's tool loop."""
    return AssistantAgent(
        "researcher",
        model_client=ScriptedClient(always(SEARCH_AGAIN)),
        tools=[search.tool],
        max_tool_iterations=iterations,
    )


def productive_agent(search: CountingSearch) -> AssistantAgent:
    def script(n: int):
        if n <= 3:
            return [("search", {"query": f"pricing page {n}"})]
        return f"found after {len(search.executions)} searches"

    return AssistantAgent(
        "researcher",
        model_client=ScriptedClient(script),
        tools=[search.tool],
        max_tool_iterations=8,
    )


def test_gate_vetoes_the_third_identical_call_before_it_runs(make_loopguard):
    """One model turn asks for the same search three times: autogen runs the calls with
    asyncio.gather, and the vetoed third call must neither run nor hang the agent."""
    loopguard = make_loopguard(mode="enforce", policy="strict")
    search = CountingSearch()
    agent = AssistantAgent(
        "researcher",
        model_client=ScriptedClient(always(SEARCH_AGAIN * 3)),
        tools=[search.tool],
        max_tool_iterations=8,
    )

    with pytest.raises(LoopGuardInterrupt) as stopped:
        asyncio.run(asyncio.wait_for(agent.run(task="find the pricing page"), timeout=30))

    assert type(stopped.value) is LoopGuardInterrupt  # the plain one, not the team's
    assert stopped.value.decision.detectors == ("repetition",)
    assert len(search.executions) == 2  # the third identical call never ran
    tools = loopguard.tool_spans("search")
    assert len(loopguard.executed_tool_spans("search")) == 2
    assert loopguard.vetoed_calls(tools) == 1
    assert sorted(s.attributes["gen_ai.tool.call.id"] for s in tools) == [
        "call_1_0",
        "call_1_1",
        "call_1_2",
    ]
    assert agent._model_client.calls == 1  # the run stopped after the batch
    assert loopguard.run_state("researcher") == "stopped"
    loopguard.assert_every_span_ended_once()


def test_strict_policy_stops_the_third_identical_turn_before_its_tool_runs(make_loopguard):
    loopguard = make_loopguard(mode="enforce", policy="strict")
    search = CountingSearch()
    agent = looping_agent(search)

    with pytest.raises(LoopGuardInterrupt) as stopped:
        asyncio.run(agent.run(task="find the pricing page"))

    assert stopped.value.decision.detectors == ("repeated_tool_steps",)
    assert len(search.executions) == 2
    assert agent._model_client.calls == 3
    assert len(loopguard.tool_spans("search")) == 2  # the third turn's call never reached it
    assert loopguard.run_state("researcher") == "stopped"
    loopguard.assert_every_span_ended_once()


def test_looping_agent_is_stopped_once_the_calls_make_no_progress(loopguard):
    search = CountingSearch()
    agent = looping_agent(search)

    with pytest.raises(LoopGuardInterrupt) as stopped:
        asyncio.run(agent.run(task="find the pricing page"))

    assert stopped.value.decision.action.value == "stop"
    assert {"repetition", "no_progress"} <= set(stopped.value.decision.detectors)
    # default policy: the third identical call runs, its identical result stops the run
    # before the model is asked again
    checks.assert_stopped_on_the_third_result(loopguard, search, agent._model_client)


def test_looping_agent_in_observe_mode_runs_to_its_own_limit(observe_loopguard):
    search = CountingSearch()

    result = asyncio.run(looping_agent(search, iterations=6).run(task="find the pricing page"))

    assert len(search.executions) == 6  # untouched: autogen's max_tool_iterations ended it
    assert isinstance(result, TaskResult)
    checks.assert_stop_recorded_not_enforced(observe_loopguard)


def test_productive_agent_answers_as_without_the_plugin(loopguard):
    plain = CountingSearch(lambda query, n: f"result {n} for {query}")
    expected = loopguard.baseline(
        lambda: asyncio.run(productive_agent(plain).run(task="find the pricing page"))
    )

    search = CountingSearch(lambda query, n: f"result {n} for {query}")
    result = asyncio.run(productive_agent(search).run(task="find the pricing page"))

    assert (
        result.messages[-1].content == expected.messages[-1].content == ("found after 3 searches")
    )
    checks.assert_productive_run(loopguard)


def test_failing_tool_reports_its_error_to_the_gate(loopguard):
    search = CountingSearch(forbidden)
    with pytest.raises(LoopGuardInterrupt) as stopped:
        asyncio.run(looping_agent(search).run(task="find the pricing page"))

    checks.assert_stopped_on_a_permanent_failure(loopguard, search, stopped)


async def _drain(stream) -> list:
    return [message async for message in stream]


def test_streamed_looping_run_is_stopped_and_its_span_ends_once(loopguard):
    search = CountingSearch()
    seen: list = []

    async def consume() -> None:
        async for message in looping_agent(search).run_stream(task="find the pricing page"):
            seen.append(message)

    with pytest.raises(LoopGuardInterrupt):
        asyncio.run(consume())

    assert len(search.executions) == 3
    assert any(isinstance(m, ToolCallExecutionEvent) for m in seen)
    assert not any(isinstance(m, TaskResult) for m in seen)
    assert loopguard.run_state("researcher") == "stopped"
    loopguard.assert_every_span_ended_once()


def test_stream_closed_early_ends_the_run_as_cancelled(loopguard):
    search = CountingSearch(lambda query, n: f"result {n}")
    outside: list = []

    async def first_tool_result_then_stop() -> None:
        stream = looping_agent(search).run_stream(task="find the pricing page")
        async for message in stream:
            if isinstance(message, ToolCallExecutionEvent):
                break
        outside.append(loopguard.guard.current_run_steps())  # the run is not current here
        await stream.aclose()
        await stream.aclose()

    asyncio.run(first_tool_result_then_stop())

    checks.assert_cancelled_by_the_consumer(loopguard, search, outside)
