"""Agno teams, and agents run inside a run: one otel-loopguard run for the whole task."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agno.team import Team
from otel_loopguard_testing import (
    assert_inner_agent_joined_the_run,
    metric_counter,
)
from scripted_models import (
    QUESTION,
    CountingSearch,
    ScriptedModel,
    looping_agent,
    new_agent,
    productive_agent,
)

from otel_loopguard.engine.decisions import LoopGuardInterrupt

DELEGATE = ("delegate_task_to_member", {"member_id": "researcher", "task": "find the pricing"})


def leader(delegations: int = 1) -> ScriptedModel:
    """A team leader's model: delegates to the researcher, then answers."""
    return ScriptedModel(script=lambda n: [DELEGATE] if n <= delegations else "team done")


def new_team(member: Any, delegations: int = 1) -> Team:
    return Team(name="support", members=[member], model=leader(delegations), telemetry=False)


def run_team(team: Team, how: str) -> Any:
    if how == "run":
        return team.run(QUESTION)
    if how == "run-stream":
        return list(team.run(QUESTION, stream=True))

    async def arun() -> Any:
        if how == "arun":
            return await team.arun(QUESTION)
        return [event async for event in team.arun(QUESTION, stream=True)]

    return asyncio.run(asyncio.wait_for(arun(), timeout=60))


@pytest.mark.parametrize("how", ["run", "arun", "run-stream", "arun-stream"])
def test_a_looping_member_stops_the_team_run(loopguard, how):
    search = CountingSearch()
    member = looping_agent(search)
    team = new_team(member)

    with pytest.raises(LoopGuardInterrupt) as stopped:
        run_team(team, how)

    # a sub-agent's loop gets one replan first (OTEL_LOOPGUARD_SUB_AGENT_REPLANS), then the
    # stop at its next step: the model turn asking for the same call again, or that call
    assert {"repetition", "repeated_tool_steps"} & set(stopped.value.decision.detectors)
    assert len(search.executions) == 3
    assert team.model.calls == 1
    (outer,) = loopguard.named("invoke_agent support")
    (inner,) = loopguard.named("invoke_agent researcher")
    assert inner.attributes["loopguard.run.id"] == outer.attributes["loopguard.run.id"]
    assert outer.attributes["loopguard.run.state"] == "stopped"
    tools = loopguard.tool_spans("search")
    assert {s.attributes["gen_ai.agent.name"] for s in tools} == {"researcher"}
    assert [s.name for s in loopguard.tool_spans("delegate_task_to_member")] == [
        "execute_tool delegate_task_to_member"
    ]
    loopguard.assert_every_span_ended_once()


@pytest.mark.parametrize("how", ["arun", "arun-stream", "run"])
def test_a_looping_member_stops_a_team_that_answers_with_its_members_answer(loopguard, how):
    """With ``respond_directly`` the team makes no model call after the delegation: the
    member's interrupt, held back in Agno's task, is raised when the run returns."""
    search = CountingSearch()
    team = new_team(looping_agent(search))
    team.respond_directly = True

    with pytest.raises(LoopGuardInterrupt) as stopped:
        run_team(team, how)

    # a sub-agent's loop gets one replan first (OTEL_LOOPGUARD_SUB_AGENT_REPLANS), then the
    # stop at its next step: the model turn asking for the same call again, or that call
    assert {"repetition", "repeated_tool_steps"} & set(stopped.value.decision.detectors)
    assert len(search.executions) == 3
    assert team.model.calls == 1
    assert loopguard.run_state("support") == "stopped"
    loopguard.assert_every_span_ended_once()


def test_a_productive_team_counts_every_model_call_of_the_task(loopguard):
    search = CountingSearch(lambda query, n: f"result {n} for {query}")
    member = productive_agent(search, searches=2)
    team = new_team(member)

    output = team.run(QUESTION)

    assert output.content == "team done"
    assert len(search.executions) == 2
    (outer,) = loopguard.named("invoke_agent support")
    assert outer.attributes["loopguard.run.state"] == "completed"
    assert outer.attributes["gen_ai.conversation.id"] == output.session_id
    steps = loopguard.guard.monitor.run_snapshot(output.session_id).counters.steps
    assert steps == team.model.calls + member.model.calls == 5


def test_an_agent_run_from_a_tool_is_part_of_the_enclosing_run(loopguard):
    """An agent a tool runs keeps a session of its own: it still joins the run that
    called it, and its loop stops that run."""
    search = CountingSearch()
    helper = looping_agent(search, name="helper")

    def ask_helper(request: str) -> str:
        """Ask the helper agent."""
        return str(helper.run(request).content)

    caller = new_agent(
        ScriptedModel(script=lambda n: [("ask_helper", {"request": "pricing"})]), [ask_helper]
    )

    with pytest.raises(LoopGuardInterrupt) as stopped:
        caller.run(QUESTION)

    # a sub-agent's loop gets one replan first (OTEL_LOOPGUARD_SUB_AGENT_REPLANS), then the
    # stop at its next step: the model turn asking for the same call again, or that call
    assert {"repetition", "repeated_tool_steps"} & set(stopped.value.decision.detectors)
    assert len(search.executions) == 3
    assert caller.model.calls == 1
    assert_inner_agent_joined_the_run(loopguard, "ask_helper")


@pytest.mark.parametrize("how", ["arun", "arun-stream", "run"])
def test_a_team_stopped_by_a_member_is_one_interrupt(loopguard, how):
    """The member's interrupt, held back in Agno's task (async) and raised again to the
    caller, is counted once in ``loopguard.interrupts``."""
    count = metric_counter(loopguard)

    with pytest.raises(LoopGuardInterrupt):
        run_team(new_team(looping_agent(CountingSearch())), how)

    assert count("loopguard.interrupts") == 1
