"""The model side of AssistantAgent: token budgets, max steps and run totals, plain and
streamed model clients."""

from __future__ import annotations

import asyncio

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import ModelClientStreamingChunkEvent
from scripted_models import COMPLETION_TOKENS, PROMPT_TOKENS, CountingSearch, ScriptedClient

from otel_loopguard.engine.decisions import LoopGuardInterrupt

TURN_TOKENS = PROMPT_TOKENS + COMPLETION_TOKENS
BUDGET = 2 * TURN_TOKENS + 20  # the third turn goes over it
ANSWER = "The pricing page is /pricing."


def costly_agent(search: CountingSearch, *, stream: bool = False) -> AssistantAgent:
    """Four searches for different pages, then an answer: no loop, only cost."""

    def script(n: int):
        return [("search", {"query": f"page {n}"})] if n <= 4 else ANSWER

    return AssistantAgent(
        "researcher",
        model_client=ScriptedClient(script),
        tools=[search.tool],
        max_tool_iterations=8,
        model_client_stream=stream,
    )


def test_token_budget_stops_the_run_before_the_turns_tools_run(make_loopguard):
    harness = make_loopguard(mode="enforce", token_budget=BUDGET)
    search = CountingSearch()
    agent = costly_agent(search)

    with pytest.raises(LoopGuardInterrupt) as stopped:
        asyncio.run(agent.run(task="find the pricing page"))

    assert stopped.value.decision.detectors == ("budget",)
    assert agent._model_client.calls == 3  # the turn over budget was reported at once
    assert len(search.executions) == 2  # and its search never ran
    assert harness.run_state("researcher") == "budget_exceeded"
    (run,) = harness.named("invoke_agent researcher")
    assert run.attributes["gen_ai.usage.input_tokens"] == 3 * PROMPT_TOKENS
    assert run.attributes["gen_ai.usage.output_tokens"] == 3 * COMPLETION_TOKENS
    harness.assert_every_span_ended_once()


def test_max_steps_vetoes_the_next_model_call_before_it_is_made(make_loopguard):
    harness = make_loopguard(mode="enforce", max_steps=2)
    search = CountingSearch()
    agent = costly_agent(search)

    with pytest.raises(LoopGuardInterrupt) as stopped:
        asyncio.run(agent.run(task="find the pricing page"))

    assert stopped.value.decision.detectors == ("budget",)
    assert agent._model_client.calls == 2  # the third call was never sent
    assert len(search.executions) == 2
    harness.assert_every_span_ended_once()


def test_observe_mode_counts_every_turn_and_changes_nothing(make_loopguard):
    harness = make_loopguard(mode="observe", token_budget=BUDGET)
    search = CountingSearch()

    result = asyncio.run(costly_agent(search).run(task="find the pricing page"))

    assert result.messages[-1].content == ANSWER
    assert len(search.executions) == 4
    assert any("budget" in a["loopguard.detectors"] for _, a in harness.decision_events("stop"))
    (run,) = harness.named("invoke_agent researcher")
    assert run.attributes["gen_ai.usage.input_tokens"] == 5 * PROMPT_TOKENS
    assert run.attributes["gen_ai.usage.output_tokens"] == 5 * COMPLETION_TOKENS


def test_streamed_model_client_turns_are_counted_once(make_loopguard):
    harness = make_loopguard(mode="observe")
    search = CountingSearch()
    chunks: list[str] = []

    async def consume() -> None:
        async for message in costly_agent(search, stream=True).run_stream(task="find it"):
            if isinstance(message, ModelClientStreamingChunkEvent):
                chunks.append(message.content)

    asyncio.run(consume())

    assert "".join(chunks).strip() == ANSWER
    (run,) = harness.named("invoke_agent researcher")
    assert run.attributes["gen_ai.usage.input_tokens"] == 5 * PROMPT_TOKENS
    assert run.attributes["loopguard.run.state"] == "completed"
    harness.assert_every_span_ended_once()


def reflecting_agent(search: CountingSearch) -> AssistantAgent:
    """One search, then autogen's extra reflection call writes the answer."""

    def script(n: int):
        return [("search", {"query": "pricing"})] if n == 1 else ANSWER

    return AssistantAgent(
        "researcher",
        model_client=ScriptedClient(script),
        tools=[search.tool],
        reflect_on_tool_use=True,
    )


def test_the_reflection_call_is_a_model_turn_too(make_loopguard):
    harness = make_loopguard(mode="observe")
    search = CountingSearch()

    result = asyncio.run(reflecting_agent(search).run(task="find the pricing page"))

    assert result.messages[-1].content == ANSWER
    (run,) = harness.named("invoke_agent researcher")
    assert run.attributes["gen_ai.usage.input_tokens"] == 2 * PROMPT_TOKENS
    assert run.attributes["gen_ai.usage.output_tokens"] == 2 * COMPLETION_TOKENS


def test_max_steps_vetoes_the_reflection_call(make_loopguard):
    harness = make_loopguard(mode="enforce", max_steps=1)
    search = CountingSearch()
    agent = reflecting_agent(search)

    with pytest.raises(LoopGuardInterrupt):
        asyncio.run(agent.run(task="find the pricing page"))

    assert len(search.executions) == 1
    assert agent._model_client.calls == 1  # the reflection call was never sent
    harness.assert_every_span_ended_once()
