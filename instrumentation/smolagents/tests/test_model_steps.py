"""The model side of each step: budgets before the next model call, usage on the run."""

from __future__ import annotations

import pytest
from scripted_models import CountingSearch, ScriptedCodeModel, ScriptedToolCallingModel
from smolagents import CodeAgent, ToolCallingAgent
from smolagents.monitoring import LogLevel

from otel_loopguard.engine.decisions import LoopGuardInterrupt


def test_token_budget_stops_before_the_next_model_call(make_loopguard):
    lg = make_loopguard(mode="enforce", token_budget=60)  # each scripted step uses 20 + 5
    search = CountingSearch(lambda query, n: f"result {n}")
    model = ScriptedToolCallingModel(lambda step: ("search", {"query": f"page {step}"}))
    agent = ToolCallingAgent(
        tools=[search.tool], model=model, max_steps=10, verbosity_level=LogLevel.OFF
    )

    with pytest.raises(LoopGuardInterrupt) as stopped:
        agent.run("find the pricing page")

    assert stopped.value.decision.detectors == ("budget",)
    assert model.calls == 3  # 75 tokens after the third step: no fourth model call
    (run,) = lg.spans("invoke_agent")
    assert run.attributes["loopguard.run.state"] == "budget_exceeded"
    assert run.attributes["gen_ai.usage.input_tokens"] == 60
    assert run.attributes["gen_ai.usage.output_tokens"] == 15


def test_code_agent_writing_the_same_code_again_is_stopped_by_strict_policy(make_loopguard):
    make_loopguard(mode="enforce", policy="strict", max_repeated_tool_steps=3)
    search = CountingSearch(lambda query, n: f"result {n}")
    # no tool call at all: only the steps (the same python_interpreter code) repeat
    model = ScriptedCodeModel(lambda step: "total = sum(range(10))\nprint(total)")
    agent = CodeAgent(tools=[search.tool], model=model, max_steps=8, verbosity_level=LogLevel.OFF)

    with pytest.raises(LoopGuardInterrupt) as stopped:
        agent.run("find the pricing page")

    assert "repeated_tool_steps" in stopped.value.decision.detectors
    assert model.calls == 3
    assert search.executions == []


def test_a_managed_agents_turns_do_not_hide_its_managers_turn(make_loopguard):
    """A manager whose tool is another agent: the sub-agent's model turns happen while
    the manager's step runs its tools, and each turn of both agents counts once."""
    lg = make_loopguard(mode="observe")
    search = CountingSearch(lambda query, n: f"result {n}")
    worker_script = [("search", {"query": "pricing"}), ("final_answer", {"answer": "found"})]
    worker = ToolCallingAgent(
        tools=[search.tool],
        model=ScriptedToolCallingModel(lambda step: worker_script[step - 1]),
        name="researcher",
        description="Looks things up.",
        max_steps=5,
        verbosity_level=LogLevel.OFF,
    )
    manager_script = [
        ("researcher", {"task": "find the pricing page"}),
        ("final_answer", {"answer": "done"}),
    ]
    manager_model = ScriptedToolCallingModel(lambda step: manager_script[step - 1])
    manager = ToolCallingAgent(
        tools=[],
        model=manager_model,
        managed_agents=[worker],
        max_steps=5,
        verbosity_level=LogLevel.OFF,
    )

    manager.run("find the pricing page")

    turns = manager_model.calls + worker.model.calls
    assert (manager_model.calls, search.executions) == (2, ["pricing"])
    (run,) = [s for s in lg.spans("invoke_agent") if s.parent is None or not s.parent.is_valid]
    assert run.attributes["gen_ai.usage.input_tokens"] == 20 * turns  # 20 + 5 per turn
    assert run.attributes["gen_ai.usage.output_tokens"] == 5 * turns
