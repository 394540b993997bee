"""Another instrumentation applied before ours (issue 29): ``Agent.stream_async`` returns its
iterable-only proxy (``__aiter__`` without ``__anext__``, as OpenInference's wrapt proxies
are). Nothing raises into the agent, observe or enforce, called or streamed, and their proxy
is iterated, not bypassed."""

from __future__ import annotations

import asyncio

import pytest
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.iterable_proxies import theirs_applied_first
from scripted_models import CountingSearch, answer_text, looping_agent, productive_agent

from otel_loopguard.engine.decisions import LoopGuardInterrupt

TARGETS = [("strands.agent.agent", "Agent.stream_async")]


def _streamed(agent, prompt: str) -> list:
    async def consume() -> list:
        return [event async for event in agent.stream_async(prompt)]

    return asyncio.run(consume())


@pytest.mark.parametrize("mode", ["observe", "enforce"])
@pytest.mark.parametrize("entry", ["call", "stream_async"])
def test_a_productive_run_through_their_proxy_is_untouched(make_loopguard, mode, entry):
    harness = make_loopguard(mode=mode)
    count = metric_counter(harness)
    with theirs_applied_first(harness, TARGETS) as seen:
        search = CountingSearch(lambda query, n: f"result {n} for {query}")
        agent = productive_agent(search)
        if entry == "call":
            assert answer_text(agent("find it")) == "found after 3 searches"
        else:
            assert any("result" in event for event in _streamed(agent, "find it"))
    assert seen  # their proxy was iterated
    assert len(search.executions) == 3
    assert harness.run_state("researcher") == "completed"
    assert count("loopguard.internal_errors") == 0


@pytest.mark.parametrize("entry", ["call", "stream_async"])
def test_a_looping_run_through_their_proxy_is_interrupted(make_loopguard, entry):
    harness = make_loopguard(mode="enforce")
    with theirs_applied_first(harness, TARGETS):
        search = CountingSearch()
        agent = looping_agent(search)
        with pytest.raises(LoopGuardInterrupt):
            agent("What is the weather in Paris?") if entry == "call" else _streamed(
                agent, "What is the weather in Paris?"
            )
    assert 1 <= len(search.executions) <= 4
    assert harness.run_state("researcher") == "stopped"
