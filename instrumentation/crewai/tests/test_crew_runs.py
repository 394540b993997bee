"""CrewAI end to end, both tool paths, driven by a scripted LLM."""

from __future__ import annotations

import asyncio

import pytest
from otel_loopguard_testing import agent_checks as checks
from scripted_crew import CountingSearch, make_crew, same_search

from otel_loopguard.engine.decisions import LoopGuardInterrupt


def productive(step: int):
    if step <= 3:
        return ("tool", "search", {"query": f"pricing page {step}"})
    return ("answer", "https://example.test/pricing", None)


@pytest.mark.parametrize("native", [True, False], ids=["native", "react"])
def test_looping_crew_is_stopped_in_enforce_mode(make_loopguard, native):
    lg = make_loopguard(mode="enforce")
    search = CountingSearch(lambda query, n: "no results")

    with pytest.raises(LoopGuardInterrupt) as stopped:
        make_crew(search, same_search, native=native).kickoff()

    assert 1 <= len(search.executions) <= 4
    assert stopped.value.decision.action.value == "stop"
    (agent,) = lg.spans("invoke_agent")
    assert agent.name == "invoke_agent researcher"
    assert agent.attributes["loopguard.run.state"] == "stopped"
    tools = lg.spans("execute_tool search")
    assert tools and all(s.parent.span_id == agent.context.span_id for s in tools)
    assert any(e["loopguard.action"] == "stop" for s in tools for e in lg.decisions_on(s))
    assert lg.open_spans() == []


def _looping_kickoff(search: CountingSearch) -> tuple[str, str]:
    """How a crew that repeats one search ends: its answer, or the exception it raised."""
    try:
        return "answer", str(make_crew(search, same_search).kickoff().raw)
    except Exception as exc:
        return "raised", type(exc).__name__


def test_looping_crew_in_observe_mode_behaves_as_without_the_plugin(make_loopguard):
    lg = make_loopguard(mode="observe")
    lg.uninstrument()
    try:
        plain = CountingSearch(lambda query, n: "no results")
        expected = _looping_kickoff(plain)
    finally:
        lg.reinstrument()

    search = CountingSearch(lambda query, n: "no results")
    # CrewAI's own guard ends this loop at its 5th identical call (raising
    # ToolExecutionFailedError, or, under its "warn" tool failure policy, ending the task
    # with what the model says next, as its release does); we must not change that
    assert _looping_kickoff(search) == expected
    assert len(search.executions) == len(plain.executions) == 5
    stops = [
        e
        for s in lg.spans("execute_tool")
        for e in lg.decisions_on(s)
        if e["loopguard.action"] == "stop"
    ]
    assert stops


@pytest.mark.parametrize("native", [True, False], ids=["native", "react"])
def test_productive_crew_gives_the_same_answer_as_without_the_plugin(make_loopguard, native):
    lg = make_loopguard(mode="enforce")
    lg.uninstrument()
    try:
        plain = CountingSearch(lambda query, n: f"result {n} for {query}")
        expected = make_crew(plain, productive, native=native).kickoff().raw
    finally:
        lg.reinstrument()

    search = CountingSearch(lambda query, n: f"result {n} for {query}")
    result = make_crew(search, productive, native=native).kickoff()

    assert result.raw == expected == "https://example.test/pricing"
    assert len(search.executions) == len(plain.executions) == 3
    tools = lg.spans("execute_tool")
    assert [s.name for s in tools] == ["execute_tool search"] * 3
    first = tools[0].attributes
    assert first["gen_ai.operation.name"] == "execute_tool"
    assert first["gen_ai.tool.name"] == "search"
    assert "pricing" not in str(dict(first))  # no content without opt-in
    (agent,) = lg.spans("invoke_agent")
    assert agent.attributes["loopguard.run.state"] == "completed"


@pytest.mark.parametrize("native", [True, False], ids=["native", "react"])
def test_failing_tool_is_stopped_although_crewai_turns_it_into_text(make_loopguard, native):
    lg = make_loopguard(mode="enforce")

    def failing(query: str, n: int) -> str:
        raise PermissionError(f"permission denied: {query}")

    search = CountingSearch(failing)
    # the ReAct path runs a failing tool twice per Action (schema arguments, then all)
    with pytest.raises(LoopGuardInterrupt) as stopped:
        make_crew(search, same_search, native=native).kickoff()

    assert 1 <= len(search.executions) <= 4
    assert "permanent_failure" in stopped.value.decision.detectors
    failed = lg.spans("execute_tool search")
    assert len(failed) == len(search.executions)  # one span per real execution
    assert failed[0].attributes["error.type"] == "PermissionError"


def test_async_kickoff_is_stopped_the_same_way(make_loopguard):
    lg = make_loopguard(mode="enforce")
    search = CountingSearch(lambda query, n: "no results")

    with pytest.raises(LoopGuardInterrupt):
        asyncio.run(make_crew(search, same_search).akickoff())

    checks.assert_loop_interrupted(lg, len(search.executions))


def test_standalone_agent_kickoff_is_its_own_run_and_is_stopped(make_loopguard):
    lg = make_loopguard(mode="enforce")
    search = CountingSearch(lambda query, n: "no results")
    agent = make_crew(search, same_search).agents[0]

    with pytest.raises(LoopGuardInterrupt):
        agent.kickoff("Find the pricing page")

    assert 1 <= len(search.executions) <= 4
    (run,) = lg.spans("invoke_agent")
    assert run.name == "invoke_agent researcher"
    assert run.attributes["loopguard.run.state"] == "stopped"
    assert all(s.parent.span_id == run.context.span_id for s in lg.spans("execute_tool"))
