"""``Crew(stream=True)``: the crew runs in CrewAI's worker thread; the interrupt still
reaches the consumer, and every span ends once."""

from __future__ import annotations

import asyncio

import pytest
from otel_loopguard_testing import agent_checks as checks
from scripted_crew import CountingSearch, make_crew, same_search

from otel_loopguard.engine.decisions import LoopGuardInterrupt


def test_streamed_looping_crew_raises_the_interrupt_to_the_consumer(make_loopguard):
    lg = make_loopguard(mode="enforce")
    search = CountingSearch(lambda query, n: "no results")
    crew = make_crew(search, same_search)
    crew.stream = True

    stream = crew.kickoff()
    with pytest.raises(LoopGuardInterrupt):
        for _chunk in stream:
            pass

    checks.assert_loop_interrupted(lg, len(search.executions))


def test_streamed_productive_crew_is_untouched(make_loopguard):
    lg = make_loopguard(mode="enforce")
    search = CountingSearch(lambda query, n: f"result {n}")

    def script(step: int):
        if step == 1:
            return ("tool", "search", {"query": "pricing"})
        return ("answer", "https://example.test/pricing", None)

    crew = make_crew(search, script)
    crew.stream = True
    stream = crew.kickoff()
    for _chunk in stream:
        pass

    assert stream.result.raw == "https://example.test/pricing"
    assert len(lg.spans("execute_tool search")) == 1
    assert lg.open_spans() == []


def test_async_streamed_looping_crew_raises_the_interrupt_to_the_consumer(make_loopguard):
    """kickoff_async awaits its worker: the interrupt arrives without a relay; keep it so."""
    lg = make_loopguard(mode="enforce")
    search = CountingSearch(lambda query, n: "no results")
    crew = make_crew(search, same_search)
    crew.stream = True

    async def consume() -> None:
        stream = await crew.kickoff_async()
        async for _chunk in stream:
            pass

    with pytest.raises(LoopGuardInterrupt):
        asyncio.run(consume())

    assert 1 <= len(search.executions) <= 4
    assert lg.open_spans() == []
