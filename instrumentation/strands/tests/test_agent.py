"""Agent invocations end to end: a real Strands agent's tool loop driven by a scripted model."""

from __future__ import annotations

import asyncio
import inspect

import pytest
from otel_loopguard_testing import agent_checks as checks
from scripted_models import (
    CountingSearch,
    ScriptedModel,
    SlowLookup,
    answer_text,
    looping_agent,
    productive_agent,
)
from strands import Agent
from strands.hooks import BeforeModelCallEvent
from strands.tools.executors import SequentialToolExecutor

from otel_loopguard.engine.decisions import LoopGuardInterrupt


def test_looping_agent_is_stopped_once_the_calls_make_no_progress(loopguard):
    search = CountingSearch()
    agent = looping_agent(search)

    with pytest.raises(LoopGuardInterrupt) as stopped:
        agent("What is the weather in Paris?")

    assert {"repetition", "no_progress"} <= set(stopped.value.decision.detectors)
    # default policy: the third identical call runs, its identical result stops the run
    # before the model is asked again
    checks.assert_stopped_on_the_third_result(loopguard, search, agent.model, call_ids=False)


def test_strict_policy_stops_the_third_identical_turn_before_its_call_runs(make_loopguard):
    loopguard = make_loopguard(mode="enforce", policy="strict")
    search = CountingSearch()
    agent = looping_agent(search)

    with pytest.raises(LoopGuardInterrupt):
        agent("What is the weather in Paris?")

    checks.assert_third_identical_call_vetoed(loopguard, search, agent.model)


@pytest.mark.parametrize("executor", [None, SequentialToolExecutor()], ids=["concurrent", "seq"])
def test_a_vetoed_call_among_parallel_calls_ends_the_invocation_at_once(make_loopguard, executor):
    """One model turn asks for the same search three times; the third is vetoed. Strands'
    concurrent executor (the default) swallows a BaseException raised in its tasks and
    would go on to ask the model again: the interrupt must leave the executor at once."""
    loopguard = make_loopguard(mode="enforce", policy="strict")
    search = CountingSearch()

    def script(n: int):
        return [("search", {"query": "pricing"})] * 3 if n == 1 else "done"

    kwargs = {"tool_executor": executor} if executor is not None else {}
    agent = Agent(
        name="researcher",
        model=ScriptedModel(script),
        tools=[search.tool],
        callback_handler=None,
        **kwargs,
    )
    model_calls_asked: list[BeforeModelCallEvent] = []
    agent.add_hook(model_calls_asked.append, BeforeModelCallEvent)

    with pytest.raises(LoopGuardInterrupt) as stopped:
        agent("pricing?")

    assert stopped.value.decision.detectors == ("repetition",)
    # the vetoed call never ran (the concurrent executor cancels the others of the turn,
    # which may or may not have run by then)
    assert 1 <= len(search.executions) <= 2
    assert agent.model.calls == len(model_calls_asked) == 1
    tools = loopguard.tool_spans("search")
    assert loopguard.vetoed_calls(tools) == 1
    (vetoed,) = [s for s in tools if loopguard.decisions_on(s, "stop")]
    assert vetoed.attributes["error.type"] == "LoopGuardInterrupt"
    assert loopguard.run_state("researcher") == "stopped"
    loopguard.assert_every_span_ended_once()


def test_a_vetoed_call_cancels_the_calls_of_its_turn_still_running(make_loopguard):
    """The concurrent executor runs a turn's tool uses as tasks: a vetoed one ends the turn
    at once, the slow sibling does not finish (nor keep the caller waiting)."""
    loopguard = make_loopguard(mode="enforce", policy="strict")
    search = CountingSearch()
    slow = SlowLookup(seconds=3)

    def script(n: int):
        calls = [("search", {"query": "weather in Paris"})]
        return [("lookup", {"key": "forecast"}), *calls] if n == 3 else calls

    agent = Agent(
        name="researcher",
        model=ScriptedModel(script),
        tools=[search.tool, slow.tool],
        callback_handler=None,
    )

    async def invoke() -> None:
        await asyncio.wait_for(agent.invoke_async("weather?"), timeout=2)

    with pytest.raises(LoopGuardInterrupt):
        asyncio.run(invoke())

    assert len(search.executions) == 2
    assert (slow.started, slow.finished) == (1, 0)
    assert loopguard.run_state("researcher") == "stopped"
    loopguard.assert_every_span_ended_once()


def test_looping_agent_in_observe_mode_is_recorded_and_never_interrupted(observe_loopguard):
    search = CountingSearch()
    agent = looping_agent(search)

    result = agent("What is the weather in Paris?")

    assert answer_text(result) == "I give up"
    assert len(search.executions) == 7  # untouched: the model itself gave up
    checks.assert_stop_recorded_not_enforced(observe_loopguard)


def test_productive_agent_answers_as_without_the_plugin(loopguard):
    plain = CountingSearch(lambda query, n: f"result {n} for {query}")
    expected = loopguard.baseline(lambda: answer_text(productive_agent(plain)("find it")))

    search = CountingSearch(lambda query, n: f"result {n} for {query}")
    result = productive_agent(search)("find it")

    assert answer_text(result) == expected == "found after 3 searches"
    checks.assert_productive_run(loopguard, content="page 1", tools_under="trace")


def test_a_streamed_invocation_is_one_run_and_is_stopped(loopguard):
    search = CountingSearch()
    agent = looping_agent(search)
    seen: list[dict] = []

    async def consume() -> None:
        async for event in agent.stream_async("What is the weather in Paris?"):
            seen.append(event)

    with pytest.raises(LoopGuardInterrupt):
        asyncio.run(consume())

    assert len(search.executions) == 3
    assert any("data" in event or "current_tool_use" in event for event in seen)
    assert len(loopguard.agent_spans()) == 1
    assert loopguard.run_state("researcher") == "stopped"
    loopguard.assert_every_span_ended_once()


def test_each_invocation_is_a_run_of_its_own(loopguard):
    """A stopped invocation does not stop the agent's next one (no conversation id)."""
    search = CountingSearch(lambda query, n: f"result {n} for {query}")
    agent = productive_agent(search, searches=1)

    agent("first question")
    agent.model.calls = 0
    asyncio.run(agent.invoke_async("second question"))

    spans = loopguard.agent_spans()
    assert [s.name for s in spans] == ["invoke_agent researcher"] * 2
    run_ids = {s.attributes["loopguard.run.id"] for s in spans}
    assert len(run_ids) == 2
    assert {s.attributes["loopguard.run.state"] for s in spans} == {"completed"}


def test_a_stream_dropped_halfway_ends_its_run_and_leaves_the_caller_clean(loopguard):
    from opentelemetry import trace

    search = CountingSearch(lambda query, n: f"result {n} for {query}")
    agent = productive_agent(search)

    async def first_events() -> None:
        stream = agent.stream_async("find it")
        async for _event in stream:
            assert not trace.get_current_span().get_span_context().is_valid
            break
        await stream.aclose()

    asyncio.run(first_events())

    (span,) = loopguard.agent_spans()
    assert span.attributes["loopguard.run.state"] == "cancelled"
    loopguard.assert_every_span_ended_once()


def test_uninstrument_restores_strands(loopguard):
    from strands.agent.agent import Agent as StrandsAgent
    from strands.event_loop import event_loop
    from strands.tools.executors._executor import ToolExecutor
    from strands.tools.executors.concurrent import ConcurrentToolExecutor

    loopguard.uninstrument()
    try:
        assert not hasattr(StrandsAgent.stream_async, "__wrapped__")
        assert not hasattr(event_loop._make_invoke_model_terminal, "__wrapped__")
        assert isinstance(inspect.getattr_static(ToolExecutor, "_stream_with_trace"), staticmethod)
        assert not hasattr(ConcurrentToolExecutor._task, "__wrapped__")
        search = CountingSearch()
        agent = looping_agent(search)
        assert answer_text(agent("weather?")) == "I give up"
        assert len(search.executions) == 7
        assert loopguard.spans() == []
    finally:
        loopguard.reinstrument()


def test_polling_with_changing_results_is_left_alone(loopguard):
    """The same call again and again is progress while its result changes (a job's status):
    the gate records each result, so only repeats with unchanged results look stuck."""
    statuses = ["queued", "running", "running 50%", "running 90%", "done"]
    poll = CountingSearch(lambda query, n: statuses[n - 1])

    def script(n: int):
        return [("search", {"query": "status of job 7"})] if n <= 5 else "the job is done"

    agent = Agent(
        name="researcher", model=ScriptedModel(script), tools=[poll.tool], callback_handler=None
    )

    result = agent("wait for job 7")

    assert answer_text(result) == "the job is done"
    assert len(poll.executions) == 5
    assert loopguard.run_state("researcher") == "completed"


def test_a_failing_tool_is_recorded_as_its_error(loopguard):
    from strands import tool

    @tool
    def fetch(url: str) -> str:
        """Fetch a page.

        Args:
            url: the page
        """
        raise ConnectionError("connection refused")

    def script(n: int):
        return [("fetch", {"url": f"https://example.invalid/{n}"})] if n <= 2 else "offline"

    agent = Agent(
        name="researcher", model=ScriptedModel(script), tools=[fetch], callback_handler=None
    )

    assert answer_text(agent("read it")) == "offline"
    spans = loopguard.tool_spans("fetch")
    assert len(spans) == 2
    assert {s.attributes["error.type"] for s in spans} == {"ConnectionError"}
    assert all(s.status.status_code.name == "ERROR" for s in spans)


def test_a_looping_agent_called_as_a_tool_stops_the_invocation_that_called_it(loopguard):
    """``Agent.as_tool()``: the inner agent's invocation joins the caller's run (its tool
    span's run), and our interrupt passes the adapter's ``except Exception``."""
    search = CountingSearch()
    inner = looping_agent(search)

    def script(n: int):
        return [("researcher", {"input": "the weather in Paris"})] if n == 1 else "no idea"

    outer = Agent(
        name="assistant",
        model=ScriptedModel(script),
        tools=[inner.as_tool()],
        callback_handler=None,
    )

    with pytest.raises(LoopGuardInterrupt):
        outer("What is the weather in Paris?")

    assert len(search.executions) == 3
    assert outer.model.calls == 1  # the caller was not asked to carry on
    spans = {s.name: s for s in loopguard.agent_spans()}
    assert set(spans) == {"invoke_agent assistant", "invoke_agent researcher"}
    run_ids = {s.attributes["loopguard.run.id"] for s in spans.values()}
    assert len(run_ids) == 1
    assert spans["invoke_agent assistant"].attributes["loopguard.run.state"] == "stopped"
    loopguard.assert_every_span_ended_once()


def test_two_agents_running_at_once_are_runs_of_their_own(loopguard):
    """Two invocations in one event loop: the looping one is stopped, the other finishes."""
    looping_search = CountingSearch()
    search = CountingSearch(lambda query, n: f"result {n} for {query}")
    looper = looping_agent(looping_search, name="looper")
    productive = productive_agent(search)

    async def both() -> list:
        return await asyncio.gather(
            looper.invoke_async("weather?"),
            productive.invoke_async("find it"),
            return_exceptions=True,
        )

    stopped, answered = asyncio.run(both())

    assert isinstance(stopped, LoopGuardInterrupt)
    assert answer_text(answered) == "found after 3 searches"
    checks.assert_runs_of_their_own(loopguard, looping_search)
