"""A ``Swarm`` is one run; its agents' ``handoff_to_agent`` calls feed the handoff-cycle
detector, so a ping-pong between two agents is stopped."""

from __future__ import annotations

import pytest
from scripted_models import ScriptedModel
from strands import Agent
from strands.multiagent import Swarm
from strands.multiagent.base import Status

from otel_loopguard.engine.decisions import LoopGuardInterrupt


def hands_off_to(target: str):
    """Every invocation: hand off to ``target``, then say so (the agent's last turn)."""

    def script(n: int):
        if n % 2:
            return [("handoff_to_agent", {"agent_name": target, "message": "your turn"})]
        return f"handed off to {target}"

    return script


def ping_pong() -> Swarm:
    alice = Agent(name="alice", model=ScriptedModel(hands_off_to("bob")), callback_handler=None)
    bob = Agent(name="bob", model=ScriptedModel(hands_off_to("alice")), callback_handler=None)
    return Swarm([alice, bob], id="desk", max_handoffs=12, max_iterations=12)


def test_ping_pong_between_swarm_agents_is_stopped(loopguard):
    swarm = ping_pong()

    with pytest.raises(LoopGuardInterrupt) as stopped:
        swarm("settle the invoice")

    assert stopped.value.decision.detectors == ("handoff_cycle",)
    handoffs = loopguard.tool_spans("handoff_to_agent")
    assert len(handoffs) < 12  # stopped well before Strands' own limits
    (run,) = loopguard.named("invoke_agent desk")
    assert run.attributes["loopguard.run.state"] == "stopped"
    # every agent invocation of the swarm joined the swarm's run
    run_ids = {s.attributes["loopguard.run.id"] for s in loopguard.agent_spans()}
    assert run_ids == {run.attributes["loopguard.run.id"]}
    loopguard.assert_every_span_ended_once()


def test_observe_mode_records_the_ping_pong_and_lets_strands_end_it(observe_loopguard):
    swarm = ping_pong()

    result = swarm("settle the invoice")

    assert result.status == Status.FAILED  # Strands' own max_handoffs ended it
    stops = observe_loopguard.decision_events("stop")
    assert stops and "handoff_cycle" in stops[0][1]["loopguard.detectors"]


def test_a_one_way_handoff_is_left_alone(loopguard):
    alice = Agent(name="alice", model=ScriptedModel(hands_off_to("bob")), callback_handler=None)
    bob = Agent(name="bob", model=ScriptedModel(lambda n: "done"), callback_handler=None)

    result = Swarm([alice, bob], id="desk")("settle the invoice")

    assert result.status == Status.COMPLETED
    assert [node.node_id for node in result.node_history] == ["alice", "bob"]
    assert [d for d, _ in loopguard.decided if d.action.value == "stop"] == []
    assert loopguard.run_state("desk") == "completed"
