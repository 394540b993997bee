"""CodeAgent: tools are called from generated code, inside smolagents' Python executor."""

from __future__ import annotations

import pytest
from scripted_models import CountingSearch, ScriptedCodeModel
from smolagents import CodeAgent
from smolagents.monitoring import LogLevel

from otel_loopguard.engine.decisions import LoopGuardInterrupt


def code_agent(search: CountingSearch, script, max_steps: int = 8) -> CodeAgent:
    return CodeAgent(
        tools=[search.tool],
        model=ScriptedCodeModel(script),
        max_steps=max_steps,
        verbosity_level=LogLevel.OFF,
    )


def test_interrupt_passes_the_python_executor_and_reaches_the_caller(make_loopguard):
    lg = make_loopguard(mode="enforce")
    search = CountingSearch(lambda query, n: "no results")
    agent = code_agent(search, lambda step: "print(search(query='pricing'))")

    with pytest.raises(LoopGuardInterrupt):
        agent.run("find the pricing page")

    assert 1 <= len(search.executions) <= 4
    (agent_span,) = lg.spans("invoke_agent")
    tools = lg.spans("execute_tool search")
    # the executor runs code in a worker thread: the tool spans still belong to the run
    assert tools and all(s.parent.span_id == agent_span.context.span_id for s in tools)
    assert agent_span.attributes["loopguard.run.state"] == "stopped"
    assert lg.open_spans() == []


def test_productive_code_run_is_untouched(make_loopguard):
    lg = make_loopguard(mode="enforce")
    search = CountingSearch(lambda query, n: f"page {n}: {query}")

    def script(step: int) -> str:
        if step <= 3:
            return f"print(search(query='pricing section {step}'))"
        return "final_answer('pricing is on page 3')"

    answer = code_agent(search, script).run("find the pricing page")

    assert answer == "pricing is on page 3"
    assert len(search.executions) == 3
    assert all(d.action.value != "stop" for d, _ in lg.decided)
    names = [s.name for s in lg.spans("execute_tool")]
    assert names == ["execute_tool search"] * 3 + ["execute_tool final_answer"]
