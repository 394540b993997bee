"""Runner invocations end to end: a real ADK agent's tool loop driven by a scripted model."""

from __future__ import annotations

import asyncio

import pytest
from google.adk.agents import LlmAgent
from google.adk.runners import Runner
from otel_loopguard_testing import agent_checks as checks
from otel_loopguard_testing import forbidden
from scripted_models import (
    CountingSearch,
    ScriptedModel,
    always,
    final_text,
    looping_agent,
    message,
    new_runner,
    productive_agent,
    run,
    run_events,
)

from otel_loopguard.engine.decisions import LoopGuardInterrupt


def test_looping_agent_is_stopped_once_the_calls_make_no_progress(loopguard):
    search = CountingSearch()
    runner = new_runner(looping_agent(search))

    with pytest.raises(LoopGuardInterrupt) as stopped:
        run(runner)

    assert {"repetition", "no_progress"} <= set(stopped.value.decision.detectors)
    # default policy: the third identical call runs, its identical result stops the run
    # before the model is asked again
    checks.assert_stopped_on_the_third_result(loopguard, search, runner.agent.model)


def test_strict_policy_vetoes_the_third_identical_call_before_it_runs(make_loopguard):
    loopguard = make_loopguard(mode="enforce", policy="strict")
    search = CountingSearch()
    runner = new_runner(looping_agent(search))

    with pytest.raises(LoopGuardInterrupt):
        run(runner)

    checks.assert_third_identical_call_vetoed(loopguard, search, runner.agent.model)


def test_a_vetoed_call_among_parallel_calls_neither_runs_nor_hangs_the_agent(make_loopguard):
    """One model turn asks for the same search three times: ADK runs the calls as gathered
    tasks, and the vetoed third must neither run nor leave the agent waiting on it."""
    loopguard = make_loopguard(mode="enforce", policy="strict")
    search = CountingSearch()
    agent = LlmAgent(
        name="researcher",
        model=ScriptedModel(script=always([("search", {"query": "pricing"})] * 3)),
        tools=[search.tool],
    )

    with pytest.raises(LoopGuardInterrupt) as stopped:
        run(new_runner(agent))  # bounded: a hang fails here

    assert stopped.value.decision.detectors == ("repetition",)
    assert len(search.executions) == 2
    assert agent.model.calls == 1
    assert loopguard.vetoed_calls(loopguard.tool_spans("search")) == 1
    assert loopguard.run_state("researcher") == "stopped"
    loopguard.assert_every_span_ended_once()


def test_looping_agent_in_observe_mode_is_recorded_and_never_interrupted(observe_loopguard):
    search = CountingSearch()

    def script(n: int):
        return [("search", {"query": "pricing"})] if n <= 6 else "gave up"

    agent = LlmAgent(name="researcher", model=ScriptedModel(script=script), tools=[search.tool])

    events = run(new_runner(agent))

    assert final_text(events) == "gave up"
    assert len(search.executions) == 6  # untouched: the model itself gave up
    checks.assert_stop_recorded_not_enforced(observe_loopguard)


def test_productive_agent_answers_as_without_the_plugin(loopguard):
    plain = CountingSearch(lambda query, n: f"result {n} for {query}")
    expected = loopguard.baseline(lambda: final_text(run(new_runner(productive_agent(plain)))))

    search = CountingSearch(lambda query, n: f"result {n} for {query}")
    events = run(new_runner(productive_agent(search)))

    assert final_text(events) == expected == "found after 3 searches"
    agent = checks.assert_productive_run(loopguard)
    assert agent.attributes["gen_ai.conversation.id"] == "session-1"


def test_concurrent_invocations_are_runs_of_their_own(loopguard):
    """Two sessions in one event loop: the looping one is stopped, the other is untouched."""
    looping_search = CountingSearch()
    search = CountingSearch(lambda query, n: f"result {n} for {query}")
    looping = new_runner(looping_agent(looping_search, name="looper"))
    productive = new_runner(productive_agent(search))

    async def both() -> list:
        return await asyncio.gather(
            run_events(looping, "session-a"),
            run_events(productive, "session-b"),
            return_exceptions=True,
        )

    stopped, events = asyncio.run(asyncio.wait_for(both(), timeout=60))

    assert isinstance(stopped, LoopGuardInterrupt)
    assert final_text(events) == "found after 3 searches"
    checks.assert_runs_of_their_own(loopguard, looping_search)


def test_sync_run_raises_the_interrupt_itself(loopguard):
    """``Runner.run`` drives ``run_async`` on a thread and reports any ``BaseException`` as a
    ``RuntimeError``: the caller gets the interrupt back, not a crash."""
    search = CountingSearch()
    runner = new_runner(looping_agent(search))
    asyncio.run(
        runner.session_service.create_session(app_name="tests", user_id="user", session_id="s")
    )

    with pytest.raises(LoopGuardInterrupt) as stopped:
        for _event in runner.run(user_id="user", session_id="s", new_message=message()):
            pass

    assert "repetition" in stopped.value.decision.detectors
    assert len(search.executions) == 3
    assert loopguard.run_state("researcher") == "stopped"
    loopguard.assert_every_span_ended_once()


def test_a_stopped_session_stays_stopped_and_a_new_session_runs(loopguard):
    """The run is the session (ADK's own ``gen_ai.conversation.id``): the next message in a
    stopped session is interrupted before its model is called; a new session starts clean."""
    search = CountingSearch()
    runner = new_runner(looping_agent(search))
    with pytest.raises(LoopGuardInterrupt):
        run(runner, "session-1")
    calls = runner.agent.model.calls

    with pytest.raises(LoopGuardInterrupt):
        run(runner, "session-1", text="try again")

    assert runner.agent.model.calls == calls
    assert len(search.executions) == 3
    with pytest.raises(LoopGuardInterrupt):
        run(runner, "session-2")
    assert len(search.executions) == 6  # a fresh run: three more before its stop


def test_failing_tool_answered_by_an_error_callback_reports_its_error(loopguard):
    """An ``on_tool_error_callback`` turns a tool's exception into an ``{"error": ...}``
    response the model reads: the gate reports it as the call's error."""

    search = CountingSearch(forbidden)
    agent = looping_agent(search)
    agent.on_tool_error_callback = lambda tool, args, tool_context, error: {"error": str(error)}

    with pytest.raises(LoopGuardInterrupt) as stopped:
        run(new_runner(agent))

    checks.assert_stopped_on_a_permanent_failure(loopguard, search, stopped)


def test_a_tool_call_we_cannot_read_still_runs_as_without_the_plugin(loopguard, monkeypatch):
    """An error in our own code (here: reading the call) is counted and logged; the call
    runs untouched and the agent answers as it would without us."""
    from otel_loopguard_google_adk import tools

    monkeypatch.setattr(tools, "_argument", checks.unreadable("call"))
    search = CountingSearch(lambda query, n: f"result {n} for {query}")

    events = run(new_runner(productive_agent(search)))

    assert final_text(events) == "found after 3 searches"
    checks.assert_ran_untouched_by_our_error(loopguard, search, "google_adk.tool_call")


def test_stream_closed_early_ends_the_run_as_cancelled(loopguard):
    search = CountingSearch(lambda query, n: f"result {n}")
    runner = new_runner(productive_agent(search))
    outside: list = []

    async def first_tool_result_then_stop() -> None:
        await runner.session_service.create_session(
            app_name="tests", user_id="user", session_id="s"
        )
        events = runner.run_async(user_id="user", session_id="s", new_message=message())
        async for event in events:
            if event.get_function_responses():
                break
        outside.append(loopguard.guard.current_run_steps())  # the run is not current here
        await events.aclose()

    asyncio.run(asyncio.wait_for(first_tool_result_then_stop(), timeout=60))

    checks.assert_cancelled_by_the_consumer(loopguard, search, outside)


def test_uninstrument_restores_adk(loopguard):
    from google.adk.flows.llm_flows.base_llm_flow import BaseLlmFlow
    from google.adk.flows.llm_flows.tools import _caller

    assert checks.wrapped(Runner.__dict__["run_async"])
    loopguard.uninstrument()
    try:
        assert not checks.wrapped(Runner.__dict__["run_async"])
        assert not checks.wrapped(Runner.__dict__["run"])
        assert not checks.wrapped(BaseLlmFlow.__dict__["_call_llm_async"])
        assert not checks.wrapped(_caller._execute_single_prepared_call)
        search = CountingSearch()

        def script(n: int):
            return [("search", {"query": "pricing"})] if n <= 5 else "gave up"

        agent = LlmAgent(name="researcher", model=ScriptedModel(script=script), tools=[search.tool])
        events = asyncio.run(run_events(new_runner(agent)))
        assert final_text(events) == "gave up"
        assert len(search.executions) == 5  # nothing stopped it
        assert loopguard.spans() == []
    finally:
        loopguard.reinstrument()


def test_an_agent_tool_whose_agent_loops_stops_the_enclosing_run(loopguard):
    """``AgentTool`` runs its agent in a runner of its own, in a throwaway session: that
    runner is part of the caller's run, and its loop stops the whole invocation."""
    from google.adk.tools.agent_tool import AgentTool

    search = CountingSearch()
    helper = looping_agent(search, name="helper")
    caller = LlmAgent(
        name="researcher",
        model=ScriptedModel(script=always([("helper", {"request": "find the pricing page"})])),
        tools=[AgentTool(agent=helper)],
    )

    with pytest.raises(LoopGuardInterrupt) as stopped:
        run(new_runner(caller))

    # a sub-agent's loop gets one replan first (OTEL_LOOPGUARD_SUB_AGENT_REPLANS), then the
    # stop at its next step: the model turn asking for the same call again, or that call
    assert {"repetition", "repeated_tool_steps"} & set(stopped.value.decision.detectors)
    assert len(search.executions) == 3
    assert caller.model.calls == 1
    checks.assert_inner_agent_joined_the_run(loopguard, "helper")


def test_a_looping_agent_in_a_workflow_is_stopped(loopguard):
    """A ``Workflow`` root runs its ``LlmAgent`` nodes through ADK's node runtime: the same
    flow, the same gate, one run named after the workflow."""
    from google.adk.workflow import START, Workflow

    search = CountingSearch()
    pipeline = Workflow(name="pipeline", edges=[(START, looping_agent(search))])

    with pytest.raises(LoopGuardInterrupt):
        run(new_runner(pipeline))

    assert len(search.executions) == 3
    assert loopguard.run_state("pipeline") == "stopped"
    tools = loopguard.tool_spans("search")
    assert {s.attributes["gen_ai.agent.name"] for s in tools} == {"researcher"}
    loopguard.assert_every_span_ended_once()
