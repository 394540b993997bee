"""ToolCallingAgent end to end: a real agent loop driven by a scripted model."""

from __future__ import annotations

import pytest
from otel_loopguard_testing import agent_checks as checks
from scripted_models import CountingSearch, ScriptedToolCallingModel
from smolagents import ToolCallingAgent
from smolagents.memory import ActionStep
from smolagents.monitoring import LogLevel

from otel_loopguard.engine.decisions import LoopGuardInterrupt


def looping_agent(search: CountingSearch, max_steps: int = 8) -> ToolCallingAgent:
    model = ScriptedToolCallingModel(lambda step: ("search", {"query": "pricing"}))
    return ToolCallingAgent(
        tools=[search.tool], model=model, max_steps=max_steps, verbosity_level=LogLevel.OFF
    )


def productive_agent(search: CountingSearch) -> ToolCallingAgent:
    def script(step: int):
        if step <= 3:
            return ("search", {"query": f"pricing page {step}"})
        return ("final_answer", {"answer": f"found after {len(search.executions)} searches"})

    return ToolCallingAgent(
        tools=[search.tool],
        model=ScriptedToolCallingModel(script),
        max_steps=8,
        verbosity_level=LogLevel.OFF,
    )


def test_looping_run_is_stopped_in_enforce_mode(make_loopguard):
    lg = make_loopguard(mode="enforce")
    search = CountingSearch(lambda query, n: "no results")

    with pytest.raises(LoopGuardInterrupt) as stopped:
        looping_agent(search).run("find the pricing page")

    checks.assert_loop_interrupted(lg, len(search.executions), stopped, agent="ToolCallingAgent")
    tools = lg.spans("execute_tool search")
    assert any(e["loopguard.action"] == "stop" for span in tools for e in lg.decisions_on(span))


def test_looping_run_in_observe_mode_runs_to_its_end(make_loopguard):
    lg = make_loopguard(mode="observe")
    search = CountingSearch(lambda query, n: "no results")

    looping_agent(search, max_steps=6).run("find the pricing page")

    assert len(search.executions) == 6  # untouched: smolagents' own max_steps ended it
    stops = [
        e
        for span in lg.spans("execute_tool")
        for e in lg.decisions_on(span)
        if e["loopguard.action"] == "stop"
    ]
    assert stops and "repetition" in stops[0]["loopguard.detectors"]
    (agent,) = lg.spans("invoke_agent")
    assert agent.attributes["loopguard.run.state"] == "max_steps"


def test_productive_run_completes_with_the_same_answer_as_without_the_plugin(make_loopguard):
    lg = make_loopguard(mode="enforce")
    lg.uninstrument()
    try:
        plain = CountingSearch(lambda query, n: f"result {n} for {query}")
        expected = productive_agent(plain).run("find the pricing page")
    finally:
        lg.reinstrument()

    search = CountingSearch(lambda query, n: f"result {n} for {query}")
    answer = productive_agent(search).run("find the pricing page")

    assert answer == expected == "found after 3 searches"
    assert lg.decided == [] or all(d.action.value != "stop" for d, _ in lg.decided)
    tools = lg.spans("execute_tool")
    assert [s.name for s in tools] == ["execute_tool search"] * 3 + ["execute_tool final_answer"]
    (agent,) = lg.spans("invoke_agent")
    assert agent.name == "invoke_agent ToolCallingAgent"
    assert agent.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert agent.attributes["loopguard.run.state"] == "completed"
    first = tools[0]
    assert first.attributes["gen_ai.operation.name"] == "execute_tool"
    assert first.attributes["gen_ai.tool.name"] == "search"
    assert first.parent.span_id == agent.context.span_id
    assert "pricing" not in str(dict(first.attributes))  # no content without opt-in


def test_failing_tool_is_stopped_although_smolagents_catches_its_error(make_loopguard):
    lg = make_loopguard(mode="enforce")

    def failing(query: str, n: int) -> str:
        raise FileNotFoundError(f"no such file: /docs/{query}")

    search = CountingSearch(failing)
    with pytest.raises(LoopGuardInterrupt) as stopped:
        looping_agent(search).run("find the pricing page")

    assert 1 <= len(search.executions) <= 4
    # the tool's own error, not smolagents' "...Please try again" wrapper (which would
    # read as retryable)
    assert "permanent_failure" in stopped.value.decision.detectors
    errors = [s for s in lg.spans("execute_tool") if s.attributes.get("error.type")]
    assert errors[0].attributes["error.type"] == "FileNotFoundError"


def test_stream_is_stopped_and_closed_exactly_once(make_loopguard):
    lg = make_loopguard(mode="enforce")
    search = CountingSearch(lambda query, n: "no results")
    steps = looping_agent(search).run("find the pricing page", stream=True)

    seen = 0
    with pytest.raises(LoopGuardInterrupt):
        for _step in steps:
            seen += 1

    assert seen > 0
    assert len(search.executions) <= 4
    assert len(lg.spans("invoke_agent")) == 1
    assert lg.open_spans() == []


def test_stream_closed_early_ends_the_agent_span_as_cancelled(make_loopguard):
    lg = make_loopguard(mode="enforce")
    search = CountingSearch(lambda query, n: f"result {n}")
    steps = looping_agent(search).run("find the pricing page", stream=True)

    # close at a step boundary: smolagents itself cannot be closed in the middle of a step
    # (its `finally` yields the step, and Python reports "generator ignored GeneratorExit")
    while not isinstance(next(steps), ActionStep):
        pass
    steps.close()
    steps.close()

    (agent,) = lg.spans("invoke_agent")
    assert agent.attributes["loopguard.run.state"] == "cancelled"
    assert lg.open_spans() == []
