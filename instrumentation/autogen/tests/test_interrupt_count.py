"""One STOP, one interrupt in ``loopguard.interrupts``: the interrupts autogen makes us hold
back (a STOP inside ``asyncio.gather``, a team member's failure that comes back as a
``RuntimeError``) are raised again to the caller without being counted again.

(Parallel calls of one model answer that are still running when the run stops each end
with their own interrupt, as the gate does in every framework: not counted here.)"""

from __future__ import annotations

import asyncio

import pytest
from autogen_agentchat.agents import AssistantAgent
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from scripted_models import CountingSearch, ScriptedClient, always
from test_teams import ping_pong_swarm, run_team

from otel_loopguard.engine.decisions import LoopGuardInterrupt
from otel_loopguard.telemetry import Telemetry


@pytest.fixture
def counted(make_loopguard):
    """``make_loopguard`` whose guard counts on a real SDK meter provider we can read."""
    reader = InMemoryMetricReader()

    def install(**settings):
        harness = make_loopguard(**settings)
        guard = harness.guard
        guard.telemetry = Telemetry(
            guard.config,
            MeterProvider(metric_readers=[reader]),
            active_runs=lambda: guard.monitor.active_runs,
        )
        return harness

    def interrupts() -> int:
        data = reader.get_metrics_data()
        return sum(
            point.value
            for resource in (data.resource_metrics if data else ())
            for scope in resource.scope_metrics
            for metric in scope.metrics
            if metric.name == "loopguard.interrupts"
            for point in metric.data.data_points
        )

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
