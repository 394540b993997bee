"""Streamed LangGraph runs: stopped the same way, every span ended exactly once."""

from __future__ import annotations

import gc

import pytest
from agents import (
    RUN_CONFIG,
    USER_INPUT,
    ToolCounter,
    build_react_graph,
    looping_script,
    productive_script,
)
from otel_loopguard_testing import agent_checks as checks

from otel_loopguard import LoopGuardInterrupt


@pytest.mark.parametrize("stream_mode", ["updates", "values"])
def test_streamed_looping_run_is_interrupted(make_loopguard, stream_mode):
    guard = make_loopguard(mode="enforce")
    counter = ToolCounter()
    graph = build_react_graph(looping_script(), counter)
    chunks = 0

    with pytest.raises(LoopGuardInterrupt):
        for _chunk in graph.stream(USER_INPUT, RUN_CONFIG, stream_mode=stream_mode):
            chunks += 1

    assert chunks > 0, "the caller received chunks before the interrupt"
    checks.assert_loop_interrupted(guard, counter["search"], agent="support_agent")


async def test_async_streamed_looping_run_is_interrupted(make_loopguard):
    guard = make_loopguard(mode="enforce")
    counter = ToolCounter()
    graph = build_react_graph(looping_script(), counter)

    with pytest.raises(LoopGuardInterrupt):
        async for _chunk in graph.astream(USER_INPUT, RUN_CONFIG, stream_mode="updates"):
            pass

    checks.assert_loop_interrupted(guard, counter["search"], agent="support_agent")


def test_stream_closed_early_ends_the_agent_span_once(make_loopguard):
    guard = make_loopguard(mode="enforce")
    graph = build_react_graph(productive_script(), ToolCounter())

    stream = graph.stream(USER_INPUT, RUN_CONFIG, stream_mode="updates")
    next(stream)
    stream.close()

    (agent,) = guard.agent_spans()
    assert agent.attributes["loopguard.run.state"] == "cancelled"
    guard.assert_every_span_ended_once()


def test_abandoned_stream_leaves_the_callers_context_clean(make_loopguard):
    """A stream dropped mid-run must not leave its run 'open' for the caller's next run."""
    guard = make_loopguard(mode="enforce")
    abandoned = build_react_graph(productive_script(), ToolCounter()).stream(
        USER_INPUT, RUN_CONFIG, stream_mode="updates"
    )
    next(abandoned)

    build_react_graph(productive_script(), ToolCounter()).invoke(USER_INPUT, RUN_CONFIG)

    del abandoned
    gc.collect()
    agents = guard.agent_spans()
    assert len(agents) == 2, "the second run got its own agent span"
    assert agents[0].context.trace_id != agents[1].context.trace_id
    guard.assert_every_span_ended_once()


async def test_async_stream_closed_early_ends_the_agent_span_once(make_loopguard):
    guard = make_loopguard(mode="enforce")
    graph = build_react_graph(productive_script(), ToolCounter())

    stream = graph.astream(USER_INPUT, RUN_CONFIG, stream_mode="updates")
    await stream.__anext__()
    await stream.aclose()

    (agent,) = guard.agent_spans()
    assert agent.attributes["loopguard.run.state"] == "cancelled"
    guard.assert_every_span_ended_once()
