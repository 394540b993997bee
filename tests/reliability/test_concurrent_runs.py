"""Many agent runs at once through the real gate, span processor and SDK, some looping.

32 threads and 1,000 asyncio tasks, each its own run (an ``agent_run`` of its own), in
``enforce`` mode: every looping run is stopped, at exactly the call where a looping run
alone is stopped (so no counter or detector state leaked between runs), no healthy run is
touched (all its calls ran, no decision on its spans, its run ends ``completed``), and
nothing deadlocks (every join has a timeout).

Already proved elsewhere, not repeated here: exact event counts under threads and tasks on
the monitor alone (``tests/test_concurrency.py``), a stop decided and announced once under a
race (same file), two asyncio runs under ``gather`` (``tests/otel/test_enforcement.py``).
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from typing import Any

from otel.helpers import Stack, make_stack
from otel_loopguard_testing import run_in_threads

from otel_loopguard.engine.decisions import LoopGuardInterrupt
from otel_loopguard.guard.decorators import agent_run, loopguard_tool

CALLS = 6  # what the framework's own loop would do
JOIN_TIMEOUT = 120.0


def _tools(stack: Stack, executed: Counter) -> tuple[Any, Any]:
    @loopguard_tool(tracer=stack.tracer, guard=stack.guard)
    def search(agent: str, query: str) -> str:
        executed[agent] += 1
        return "no results" if agent.startswith("loop") else f"{query}: 3 results"

    @loopguard_tool(tracer=stack.tracer, guard=stack.guard, name="search")
    async def search_async(agent: str, query: str) -> str:
        executed[agent] += 1
        await asyncio.sleep(0)  # let the other runs interleave inside the call
        return "no results" if agent.startswith("loop") else f"{query}: 3 results"

    return search, search_async


def _sync_agent(stack: Stack, search: Any, agent: str) -> str:
    looping = agent.startswith("loop")
    try:
        with agent_run(agent, tracer=stack.tracer, guard=stack.guard):
            for i in range(CALLS):
                search(agent, "pricing" if looping else f"{agent} topic {i}")
    except LoopGuardInterrupt:
        return "stopped"
    return "done"


async def _async_agent(stack: Stack, search_async: Any, agent: str) -> str:
    looping = agent.startswith("loop")
    try:
        with agent_run(agent, tracer=stack.tracer, guard=stack.guard):
            for i in range(CALLS):
                await search_async(agent, "pricing" if looping else f"{agent} topic {i}")
    except LoopGuardInterrupt:
        return "stopped"
    return "done"


def _calls_until_stop_alone() -> int:
    """How many calls a looping run makes before its STOP when it runs by itself."""
    stack = make_stack(mode="enforce")
    executed: Counter = Counter()
    search, _ = _tools(stack, executed)
    assert _sync_agent(stack, search, "loop-alone") == "stopped"
    assert 2 <= executed["loop-alone"] < CALLS
    return executed["loop-alone"]


def _check(stack: Stack, outcomes: dict[str, str], executed: Counter, expected: int) -> None:
    states: dict[str, str] = {}
    decided_traces = set()
    for span in stack.spans():
        if span.name.startswith("invoke_agent "):
            states[span.name.removeprefix("invoke_agent ")] = span.attributes["loopguard.run.state"]
    for span, _event in stack.decision_events():
        decided_traces.add(span.context.trace_id)
    trace_of = {
        span.name.removeprefix("invoke_agent "): span.context.trace_id
        for span in stack.spans()
        if span.name.startswith("invoke_agent ")
    }
    for agent, outcome in outcomes.items():
        if agent.startswith("loop"):
            assert outcome == "stopped", agent
            assert executed[agent] == expected, (agent, executed[agent])
            assert states[agent] == "stopped", agent
        else:
            assert outcome == "done", agent
            assert executed[agent] == CALLS, agent
            assert states[agent] == "completed", agent
            assert trace_of[agent] not in decided_traces, f"a decision touched {agent}"
    assert stack.metric_total("loopguard.internal_errors") == 0
    assert stack.guard.monitor.internal_errors == 0
    assert stack.metric_total("loopguard.interrupts") == sum(
        1 for agent in outcomes if agent.startswith("loop")
    )
    assert stack.guard.monitor.active_runs == 0  # every run ended and was dropped


def test_32_threads_each_its_own_run_some_looping() -> None:
    expected = _calls_until_stop_alone()
    stack = make_stack(mode="enforce")
    executed: Counter = Counter()
    search, _ = _tools(stack, executed)
    agents = [f"{'loop' if n % 4 == 0 else 'healthy'}-{n}" for n in range(32)]
    outcomes: dict[str, str] = {}
    barrier = threading.Barrier(len(agents))

    def worker(agent: str) -> None:
        barrier.wait(timeout=JOIN_TIMEOUT)
        outcomes[agent] = _sync_agent(stack, search, agent)

    threads = run_in_threads(worker, agents, timeout=JOIN_TIMEOUT, daemon=True)
    assert not any(thread.is_alive() for thread in threads), "deadlock: a run never finished"
    assert set(outcomes) == set(agents)
    _check(stack, outcomes, executed, expected)


def test_1000_asyncio_tasks_each_its_own_run_some_looping() -> None:
    expected = _calls_until_stop_alone()
    stack = make_stack(mode="enforce")
    executed: Counter = Counter()
    _, search_async = _tools(stack, executed)
    agents = [f"{'loop' if n % 10 == 0 else 'healthy'}-{n}" for n in range(1_000)]

    async def main() -> list[str]:
        tasks = [_async_agent(stack, search_async, agent) for agent in agents]
        return await asyncio.wait_for(asyncio.gather(*tasks), timeout=JOIN_TIMEOUT)

    results = asyncio.run(main())
    _check(stack, dict(zip(agents, results, strict=True)), executed, expected)
