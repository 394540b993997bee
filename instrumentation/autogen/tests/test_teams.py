"""Teams end to end: a Swarm whose two agents hand the task back and forth, and a round-robin
team whose member loops on a tool, on autogen's own runtime."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TaskResult
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.messages import HandoffMessage
from autogen_agentchat.teams import RoundRobinGroupChat, Swarm
from scripted_models import CountingSearch, ScriptedClient, always

from otel_loopguard.engine.decisions import LoopGuardInterrupt

MAX_MESSAGES = 20


def ping_pong_swarm() -> Swarm:
    """alice always hands over to bob, bob always back to alice."""
    alice = AssistantAgent(
        "alice",
        model_client=ScriptedClient(always([("transfer_to_bob", {})])),
        handoffs=["bob"],
    )
    bob = AssistantAgent(
        "bob",
        model_client=ScriptedClient(always([("transfer_to_alice", {})])),
        handoffs=["alice"],
    )
    return Swarm([alice, bob], termination_condition=MaxMessageTermination(MAX_MESSAGES))


def run_team(team, task: str = "refund order 42", seconds: float = 30):
    """``team.run(task)``, failing the test if the team still runs after ``seconds`` (a
    team whose runtime swallowed an exception waits forever)."""

    async def main():
        running = asyncio.ensure_future(team.run(task=task))
        await asyncio.wait({running}, timeout=seconds)
        if not running.done():
            running.cancel()
            with contextlib.suppress(BaseException):
                await running
            raise AssertionError(f"the team was still running after {seconds} s")
        return running.result()

    return asyncio.run(main())


def handoffs(messages) -> list[tuple[str, str]]:
    return [(m.source, m.target) for m in messages if isinstance(m, HandoffMessage)]


def test_swarm_ping_pong_is_stopped_in_enforce_mode(loopguard):
    team = ping_pong_swarm()

    with pytest.raises(LoopGuardInterrupt) as stopped:
        run_team(team)

    assert type(stopped.value) is LoopGuardInterrupt  # not the team-internal Exception
    assert stopped.value.decision.detectors == ("handoff_cycle",)
    assert isinstance(stopped.value.__cause__, RuntimeError)  # how the team reported it
    calls = team._participants[0]._model_client.calls + team._participants[1]._model_client.calls
    assert calls < MAX_MESSAGES // 2  # well before autogen's own limit
    (run,) = loopguard.named("invoke_agent Swarm")
    assert run.attributes["loopguard.run.state"] == "stopped"
    handoff_stops = loopguard.decision_events("stop")
    assert handoff_stops and handoff_stops[0][1]["loopguard.detectors"] == ("handoff_cycle",)
    loopguard.assert_every_span_ended_once()


def test_swarm_ping_pong_in_observe_mode_runs_to_its_termination(observe_loopguard):
    result = run_team(ping_pong_swarm())

    assert isinstance(result, TaskResult)
    assert result.stop_reason.startswith("Maximum number of messages")  # autogen's own limit
    assert handoffs(result.messages)[:2] == [("alice", "bob"), ("bob", "alice")]
    stops = observe_loopguard.decision_events("stop")
    assert stops and "handoff_cycle" in stops[0][1]["loopguard.detectors"]
    observe_loopguard.assert_every_span_ended_once()


def test_a_team_member_looping_on_a_tool_stops_the_team(loopguard):
    search = CountingSearch()
    researcher = AssistantAgent(
        "researcher",
        model_client=ScriptedClient(always([("search", {"query": "pricing"})])),
        tools=[search.tool],
    )
    writer = AssistantAgent("writer", model_client=ScriptedClient(always("Please search again.")))
    team = RoundRobinGroupChat(
        [researcher, writer], termination_condition=MaxMessageTermination(MAX_MESSAGES)
    )

    with pytest.raises(LoopGuardInterrupt) as stopped:
        run_team(team)

    assert type(stopped.value) is LoopGuardInterrupt
    assert "repetition" in stopped.value.decision.detectors
    assert len(search.executions) == 3  # the third identical result stopped it
    tools = loopguard.tool_spans("search")
    assert {s.attributes["gen_ai.agent.name"] for s in tools} == {"researcher"}
    (run,) = loopguard.named("invoke_agent RoundRobinGroupChat")
    assert all(s.context.trace_id == run.context.trace_id for s in tools)
    assert run.attributes["loopguard.run.state"] == "stopped"
    loopguard.assert_every_span_ended_once()


def test_team_stream_closed_early_ends_the_run_as_cancelled(loopguard):
    search = CountingSearch(lambda query, n: f"result {n}")

    def script(n: int):
        return [("search", {"query": f"page {n}"})]

    researcher = AssistantAgent(
        "researcher", model_client=ScriptedClient(script), tools=[search.tool]
    )
    writer = AssistantAgent("writer", model_client=ScriptedClient(always("Go on.")))
    team = RoundRobinGroupChat([researcher, writer], termination_condition=MaxMessageTermination(6))
    outside: list = []

    async def first_messages_then_stop() -> None:
        stream = team.run_stream(task="find the pricing page")
        async for _message in stream:
            outside.append(loopguard.guard.current_run_steps())  # None: not current here
            if len(outside) == 2:
                break
        await stream.aclose()

    asyncio.run(asyncio.wait_for(first_messages_then_stop(), timeout=60))

    assert outside == [None, None]
    (run,) = loopguard.named("invoke_agent RoundRobinGroupChat")
    assert run.attributes["loopguard.run.state"] == "cancelled"
    assert loopguard.open_spans() == []
    loopguard.assert_every_span_ended_once()


def test_a_team_inside_a_team_is_stopped_without_hanging_the_outer_team(loopguard):
    """The inner Swarm is a participant of the outer team: its interrupt must leave it as
    an Exception too, or the outer team's runtime waits forever."""
    outer = RoundRobinGroupChat(
        [ping_pong_swarm()], termination_condition=MaxMessageTermination(MAX_MESSAGES)
    )

    with pytest.raises(LoopGuardInterrupt) as stopped:
        run_team(outer)

    assert type(stopped.value) is LoopGuardInterrupt
    assert stopped.value.decision.detectors == ("handoff_cycle",)
    (run,) = loopguard.named("invoke_agent RoundRobinGroupChat")
    assert run.attributes["loopguard.run.state"] == "stopped"
    loopguard.assert_every_span_ended_once()
