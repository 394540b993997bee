"""Another instrumentation applied before ours (issue 29): ``BaseChatAgent.run_stream`` and
``AssistantAgent._call_llm`` return its iterable-only proxies (``__aiter__`` without
``__anext__``, as OpenInference's wrapt proxies are). Nothing raises into the agent, observe
or enforce, run or streamed, and their proxies are iterated, not bypassed."""

from __future__ import annotations

import asyncio

import pytest
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.iterable_proxies import theirs_applied_first
from scripted_models import CountingSearch
from test_assistant_agent import looping_agent, productive_agent

from otel_loopguard.engine.decisions import LoopGuardInterrupt

TARGETS = [
    ("autogen_agentchat.agents._base_chat_agent", "BaseChatAgent.run_stream"),
    ("autogen_agentchat.agents._assistant_agent", "AssistantAgent._call_llm"),
]
TASK = "find the pricing page"


def _run(agent, entry: str) -> list:
    async def streamed() -> list:
        return [message async for message in agent.run_stream(task=TASK)]

    async def ran() -> list:
        return list((await agent.run(task=TASK)).messages)

    return asyncio.run(streamed() if entry == "run_stream" else ran())


@pytest.mark.parametrize("mode", ["observe", "enforce"])
@pytest.mark.parametrize("entry", ["run", "run_stream"])
def test_a_productive_run_through_their_proxies_is_untouched(make_loopguard, mode, entry):
    harness = make_loopguard(mode=mode)
    count = metric_counter(harness)
    with theirs_applied_first(harness, TARGETS) as seen:
        search = CountingSearch(lambda query, n: f"result {n} for {query}")
        messages = _run(productive_agent(search), entry)
    assert messages
    assert seen  # their proxies were iterated
    assert harness.run_state("researcher") == "completed"
    assert count("loopguard.internal_errors") == 0


@pytest.mark.parametrize("entry", ["run", "run_stream"])
def test_a_looping_run_through_their_proxies_is_interrupted(make_loopguard, entry):
    harness = make_loopguard(mode="enforce")
    with theirs_applied_first(harness, TARGETS):
        search = CountingSearch()
        with pytest.raises(LoopGuardInterrupt):
            _run(looping_agent(search), entry)
    assert 1 <= len(search.executions) <= 4
    assert harness.run_state("researcher") == "stopped"
