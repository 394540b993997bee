"""``transfer_to_agent`` between sub-agents: a ping-pong is caught by the handoff-cycle
detector, from the targets ADK's transfer tool really sets."""

from __future__ import annotations

import pytest
from google.adk.agents import LlmAgent
from scripted_models import Answer, ScriptedModel, final_text, new_runner, run

from otel_loopguard.engine.decisions import LoopGuardInterrupt


def transfer(agent_name: str) -> list[tuple[str, dict]]:
    return [("transfer_to_agent", {"agent_name": agent_name})]


def ping_pong(rounds: int = 6) -> LlmAgent:
    """A coordinator sends the task to alice; alice and bob hand it back and forth until
    bob gives up on his ``rounds``-th turn."""

    def bob(n: int) -> Answer:
        return transfer("alice") if n < rounds else "nobody can answer this"

    return LlmAgent(
        name="coordinator",
        model=ScriptedModel(script=lambda n: transfer("alice")),
        sub_agents=[
            LlmAgent(name="alice", model=ScriptedModel(script=lambda n: transfer("bob"))),
            LlmAgent(name="bob", model=ScriptedModel(script=bob)),
        ],
    )


def models(coordinator: LlmAgent) -> dict[str, int]:
    return {agent.name: agent.model.calls for agent in (coordinator, *coordinator.sub_agents)}


def test_ping_pong_between_sub_agents_is_stopped(loopguard):
    coordinator = ping_pong()

    with pytest.raises(LoopGuardInterrupt) as stopped:
        run(new_runner(coordinator))

    assert stopped.value.decision.detectors == ("handoff_cycle",)
    assert "alice → bob → alice" in str(stopped.value)
    # coordinator → alice, then alice → bob → alice twice: the second cycle stops it
    assert models(coordinator) == {"coordinator": 1, "alice": 2, "bob": 2}
    handoffs = [e for _d, e in loopguard.decided if e.kind.value == "handoff"]
    assert [(e.actor, e.target_agent) for e in handoffs][-1] == ("bob", "alice")
    transfers = loopguard.tool_spans("transfer_to_agent")
    assert len(transfers) == 5
    assert loopguard.decisions_on(transfers[-1], "stop")
    assert loopguard.run_state("coordinator") == "stopped"
    loopguard.assert_every_span_ended_once()


def test_ping_pong_in_observe_mode_runs_to_its_end(observe_loopguard):
    coordinator = ping_pong(rounds=4)

    events = run(new_runner(coordinator))

    assert final_text(events) == "nobody can answer this"
    assert models(coordinator) == {"coordinator": 1, "alice": 4, "bob": 4}
    stops = observe_loopguard.decision_events("stop")
    assert any("handoff_cycle" in attrs["loopguard.detectors"] for _s, attrs in stops)


def test_one_way_transfers_are_no_cycle(loopguard):
    """coordinator → alice → bob, who answers: handoffs, but no loop."""
    coordinator = LlmAgent(
        name="coordinator",
        model=ScriptedModel(script=lambda n: transfer("alice")),
        sub_agents=[
            LlmAgent(name="alice", model=ScriptedModel(script=lambda n: transfer("bob"))),
            LlmAgent(name="bob", model=ScriptedModel(script=lambda n: "the answer")),
        ],
    )

    events = run(new_runner(coordinator))

    assert final_text(events) == "the answer"
    transfers = loopguard.tool_spans("transfer_to_agent")
    assert [s.attributes["gen_ai.agent.name"] for s in transfers] == ["coordinator", "alice"]
    assert loopguard.decided == []  # no decision other than continue was taken
    assert loopguard.run_state("coordinator") == "completed"
    loopguard.assert_every_span_ended_once()
