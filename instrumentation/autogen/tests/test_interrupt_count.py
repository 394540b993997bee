"""One STOP, one interrupt in ``loopguard.interrupts``: the interrupts autogen makes us hold
back (a STOP inside ``asyncio.gather``, a team member's failure that comes back as a
``RuntimeError``) are raised again to the caller without being counted again.

(Parallel calls of one model answer that are still running when the run stops each end
with their own interrupt, as the gate does in every framework: not counted here.)"""

from __future__ import annotations

import asyncio

import pytest
from autogen_agentchat.agents import AssistantAgent
from otel_loopguard_testing import metric_counter
from scripted_models import CountingSearch, ScriptedClient, always
from test_teams import ping_pong_swarm, run_team

from otel_loopguard.engine.decisions import LoopGuardInterrupt


@pytest.fixture
def counted(make_loopguard):
    """``make_loopguard`` whose guard counts on a real SDK meter provider we can read."""
    counters = []

    def install(**settings):
        harness = make_loopguard(**settings)
        counters.append(metric_counter(harness))
        return harness

    def interrupts() -> float:
        return sum(count("loopguard.interrupts") for count in counters)

    return install, interrupts


def test_a_stop_inside_a_tool_call_is_one_interrupt(counted):
    """The STOP comes when the third identical search ends; autogen runs tool calls in
    ``asyncio.gather``, so the interrupt is held back there and raised after the batch."""
    install, interrupts = counted
    install(mode="enforce")
    search = CountingSearch()
    agent = AssistantAgent(
        "researcher",
        model_client=ScriptedClient(always([("search", {"query": "pricing"})])),
        tools=[search.tool],
        max_tool_iterations=8,
    )

    with pytest.raises(LoopGuardInterrupt):
        asyncio.run(agent.run(task="find the pricing page"))

    assert len(search.executions) == 3
    assert interrupts() == 1


def test_a_team_stopped_by_a_member_is_one_interrupt(counted):
    install, interrupts = counted
    install(mode="enforce")

    with pytest.raises(LoopGuardInterrupt):
        run_team(ping_pong_swarm())

    assert interrupts() == 1
