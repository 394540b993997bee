"""Agno agents under otel-loopguard: runs, the tool gate, enforce and observe, host safety."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agno.agent import Agent
from otel_loopguard_testing import agent_checks as checks
from otel_loopguard_testing import forbidden
from scripted_models import (
    QUESTION,
    CountingSearch,
    ScriptedModel,
    always,
    looping_agent,
    new_agent,
    productive_agent,
)

from otel_loopguard.engine.decisions import LoopGuardInterrupt


def arun(agent: Agent, **kwargs: Any) -> Any:
    """``agent.arun`` to its end, bounded in time (a hang fails the test)."""
    return asyncio.run(asyncio.wait_for(agent.arun(QUESTION, **kwargs), timeout=60))


def astream(agent: Agent, **kwargs: Any) -> list[Any]:
    async def events() -> list[Any]:
        return [event async for event in agent.arun(QUESTION, stream=True, **kwargs)]

    return asyncio.run(asyncio.wait_for(events(), timeout=60))


def gives_up_after(searches: int) -> Any:
    def script(n: int) -> Any:
        return [("search", {"query": "pricing"})] if n <= searches else "gave up"

    return script


#: each way to run an agent, to its end
RUNS = {
    "run": lambda agent: agent.run(QUESTION),
    "arun": arun,
    "run-stream": lambda agent: list(agent.run(QUESTION, stream=True)),
    "arun-stream": astream,
}


@pytest.mark.parametrize("how", RUNS)
def test_looping_agent_is_stopped_before_the_fourth_call_runs(loopguard, how):
    search = CountingSearch()
    agent = looping_agent(search)

    with pytest.raises(LoopGuardInterrupt) as stopped:
        RUNS[how](agent)

    assert "repetition" in stopped.value.decision.detectors
    checks.assert_stopped_on_the_third_result(loopguard, search, agent.model)


@pytest.mark.parametrize("how", ["run", "arun"])
def test_strict_policy_vetoes_the_third_identical_call_before_it_runs(make_loopguard, how):
    loopguard = make_loopguard(mode="enforce", policy="strict")
    search = CountingSearch()
    agent = looping_agent(search)

    with pytest.raises(LoopGuardInterrupt):
        RUNS[how](agent)

    checks.assert_third_identical_call_vetoed(loopguard, search, agent.model)


@pytest.mark.parametrize("how", ["run", "arun"])
def test_a_vetoed_call_among_parallel_calls_neither_runs_nor_hangs_the_agent(make_loopguard, how):
    """One model turn asks for the same search three times: ``arun`` runs the calls in
    ``asyncio.gather`` (sync tools in worker threads), ``run`` one after the other; the
    vetoed third must neither run nor leave the agent waiting on it."""
    loopguard = make_loopguard(mode="enforce", policy="strict")
    search = CountingSearch()
    model = ScriptedModel(script=always([("search", {"query": "pricing"})] * 3))
    agent = new_agent(model, [search.tool])

    with pytest.raises(LoopGuardInterrupt) as stopped:
        RUNS[how](agent)  # bounded: a hang fails here

    assert stopped.value.decision.detectors == ("repetition",)
    assert len(search.executions) == 2
    assert model.calls == 1
    assert loopguard.vetoed_calls(loopguard.tool_spans("search")) == 1
    assert loopguard.run_state("researcher") == "stopped"
    loopguard.assert_every_span_ended_once()


def test_an_async_tool_goes_through_the_gate(loopguard):
    executions: list[str] = []

    async def search(query: str) -> str:
        """Search the documentation."""
        executions.append(query)
        return "no results"

    agent = new_agent(ScriptedModel(script=always([("search", {"query": "pricing"})])), [search])

    with pytest.raises(LoopGuardInterrupt):
        arun(agent)

    assert len(executions) == 3
    assert len(loopguard.executed_tool_spans("search")) == 3
    assert loopguard.run_state("researcher") == "stopped"


def test_looping_agent_in_observe_mode_is_recorded_and_never_interrupted(observe_loopguard):
    search = CountingSearch()
    agent = new_agent(ScriptedModel(script=gives_up_after(6)), [search.tool])

    output = agent.run(QUESTION)

    assert output.content == "gave up"
    assert len(search.executions) == 6  # untouched: the model itself gave up
    checks.assert_stop_recorded_not_enforced(observe_loopguard)


@pytest.mark.parametrize("how", RUNS)
def test_productive_agent_answers_as_without_the_plugin(loopguard, how):
    plain = CountingSearch(lambda query, n: f"result {n} for {query}")
    baseline = loopguard.baseline(lambda: RUNS[how](productive_agent(plain)))

    search = CountingSearch(lambda query, n: f"result {n} for {query}")
    agent = productive_agent(search)
    outcome = RUNS[how](agent)

    assert answer(outcome) == answer(baseline) == "found after 3 searches"
    assert search.executions == plain.executions
    run = checks.assert_productive_run(loopguard)
    assert run.attributes["gen_ai.conversation.id"] == agent.session_id


def answer(outcome: Any) -> str:
    """The final text of a run's output, or of its streamed content events."""
    if isinstance(outcome, list):
        return "".join(
            event.content for event in outcome if isinstance(getattr(event, "content", None), str)
        ).strip()
    return outcome.content.strip()


def test_a_stopped_session_stays_stopped_and_a_new_session_runs(loopguard):
    """The run is the session (the ``session.id`` of Agno's own tracing): the next run in
    a stopped session is interrupted before its model is called; a new session starts
    clean."""
    search = CountingSearch()
    agent = looping_agent(search)
    with pytest.raises(LoopGuardInterrupt):
        agent.run(QUESTION)
    calls = agent.model.calls

    with pytest.raises(LoopGuardInterrupt):
        agent.run("try again")  # the agent keeps its session

    assert agent.model.calls == calls
    assert len(search.executions) == 3
    with pytest.raises(LoopGuardInterrupt):
        agent.run(QUESTION, session_id="another-session")
    assert len(search.executions) == 6  # a fresh run: three more before its stop


def test_concurrent_runs_are_runs_of_their_own(loopguard):
    """Two agents in one event loop: the looping one is stopped, the other is untouched."""
    looping_search = CountingSearch()
    search = CountingSearch(lambda query, n: f"result {n} for {query}")
    looping = looping_agent(looping_search, name="looper")
    productive = productive_agent(search)

    async def both() -> list[Any]:
        return await asyncio.gather(
            looping.arun(QUESTION), productive.arun(QUESTION), return_exceptions=True
        )

    stopped, output = asyncio.run(asyncio.wait_for(both(), timeout=60))

    assert isinstance(stopped, LoopGuardInterrupt)
    assert output.content == "found after 3 searches"
    checks.assert_runs_of_their_own(loopguard, looping_search)


def test_runs_in_threads_are_runs_of_their_own(loopguard):
    """Two agents run at once in two threads (sync ``run``): each its own run."""
    from concurrent.futures import ThreadPoolExecutor

    looping_search = CountingSearch()
    search = CountingSearch(lambda query, n: f"result {n} for {query}")
    looping = looping_agent(looping_search, name="looper")
    productive = productive_agent(search)

    with ThreadPoolExecutor(max_workers=2) as pool:
        stopped = pool.submit(looping.run, QUESTION)
        answered = pool.submit(productive.run, QUESTION)
        assert answered.result(timeout=60).content == "found after 3 searches"
        with pytest.raises(LoopGuardInterrupt):
            stopped.result(timeout=60)

    checks.assert_runs_of_their_own(loopguard, looping_search, agents_on_the_calls=False)


def test_failing_tool_reports_its_error(loopguard):
    """Agno catches a tool's exception and hands its text to the model: the gate reports
    it as the call's error, and the permanent failure stops the run."""

    search = CountingSearch(forbidden)
    agent = looping_agent(search)

    with pytest.raises(LoopGuardInterrupt) as stopped:
        agent.run(QUESTION)

    checks.assert_stopped_on_a_permanent_failure(loopguard, search, stopped)


def test_a_tool_call_we_cannot_read_still_runs_as_without_the_plugin(loopguard, monkeypatch):
    """An error in our own code (here: reading the call) is counted and logged; the call
    runs untouched and the agent answers as it would without us."""
    from otel_loopguard_agno import tools

    monkeypatch.setattr(tools, "_read_call", checks.unreadable("call"))
    search = CountingSearch(lambda query, n: f"result {n} for {query}")

    output = productive_agent(search).run(QUESTION)

    assert output.content == "found after 3 searches"
    checks.assert_ran_untouched_by_our_error(loopguard, search, "agno.tool_call")


@pytest.mark.parametrize("how", RUNS)
def test_a_run_agno_ended_with_an_error_ends_as_error(loopguard, how):
    """Agno catches a failure of the model (or anything else in the run) and returns a
    ``RunOutput`` with status ``error`` instead of raising: the run ends as ``error``."""

    def script(n: int) -> Any:
        raise ConnectionError("the provider is unreachable")

    agent = new_agent(ScriptedModel(script=script), [])

    RUNS[how](agent)  # no exception: Agno reports it in the output

    assert loopguard.run_state("researcher") == "error"
    loopguard.assert_every_span_ended_once()


def test_a_run_we_cannot_read_is_still_a_run_and_answers(loopguard, monkeypatch):
    """An error in our own code reading the run (its agent, its session) is counted and
    logged; the run goes on, gated, as a run of its own."""
    from otel_loopguard_agno import runs

    monkeypatch.setattr(runs, "_describe", checks.unreadable("run"))
    search = CountingSearch()

    with pytest.raises(LoopGuardInterrupt):
        looping_agent(search).run(QUESTION)

    assert len(search.executions) == 3
    assert any("agno.run" in message for message in loopguard.logged())
    assert loopguard.run_state("agno") == "stopped"


def test_stream_closed_early_ends_the_run_as_cancelled(loopguard):
    search = CountingSearch(lambda query, n: f"result {n}")
    agent = productive_agent(search)
    outside: list[Any] = []

    events = agent.run(QUESTION, stream=True, stream_events=True)
    for event in events:
        if getattr(event, "event", None) == "ToolCallCompleted":
            break
    outside.append(loopguard.guard.current_run_steps())  # the run is not current here
    events.close()

    checks.assert_cancelled_by_the_consumer(loopguard, search, outside)


def test_uninstrument_restores_agno(loopguard):
    from agno.agent import _run as agent_run
    from agno.models.base import Model
    from agno.team import _run as team_run
    from agno.tools.function import FunctionCall

    assert checks.wrapped(agent_run._run)
    loopguard.uninstrument()
    try:
        for module in (agent_run, team_run):
            for name in ("_run", "_run_stream", "_arun", "_arun_stream"):
                assert not checks.wrapped(getattr(module, name)), name
        for name in ("_process_model_response", "process_response_stream"):
            assert not checks.wrapped(Model.__dict__[name])
        assert not checks.wrapped(FunctionCall.__dict__["execute"])
        assert not checks.wrapped(FunctionCall.__dict__["aexecute"])
        search = CountingSearch()
        agent = new_agent(ScriptedModel(script=gives_up_after(5)), [search.tool])
        assert agent.run(QUESTION).content == "gave up"
        assert len(search.executions) == 5  # nothing stopped it
        assert loopguard.spans() == []
    finally:
        loopguard.reinstrument()
