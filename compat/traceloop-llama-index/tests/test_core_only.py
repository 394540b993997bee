"""Our core alone beside OpenLLMetry's LlamaIndex instrumentation, observe mode.

Their tool runs are ``task`` spans named ``FunctionTool.task``: the dialect table reads them
as tool executions (the tool's name from their result, ``{"kwargs": ...}`` unwrapped to the
arguments). Their ``workflow`` span is given its kind only after it started: it is held as
the run's root from its start, so each ``agent.run()`` is one run that lasts until its last
step, also under one application span.
"""

from __future__ import annotations

import asyncio

import pytest
from agents import (
    ToolCounter,
    build_agent,
    looping_script,
    productive_script,
    run_to_end,
)
from conftest import their_tool_spans
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.compat_checks import assert_loop_observed, assert_stopped_then_completed


@pytest.mark.parametrize("stream", [False, True], ids=["awaited", "streamed"])
def test_a_looping_agent_is_stopped_within_the_fourth_call(observe_loopguard, stream) -> None:
    def start():
        counter = ToolCounter()
        agent = build_agent(looping_script(8), counter)
        run = run_to_end(agent, stream=stream)
        return lambda: asyncio.run(asyncio.wait_for(run, 30)), lambda: counter["search"]

    result = assert_loop_observed(observe_loopguard, start, executions=8)
    assert str(result) == "I could not find the price."
    tools = their_tool_spans(observe_loopguard)
    assert len(tools) == 8
    assert "tool.name" not in tools[0].attributes  # the tool is named in their result only
    (run,) = observe_loopguard.named("loopguard.run")
    assert run.attributes["loopguard.run.tool_calls"] == 8  # the run lasted to its last step


async def test_a_productive_agent_gets_no_stop(observe_loopguard, content: bool) -> None:
    count = metric_counter(observe_loopguard)
    counter = ToolCounter()
    result = await asyncio.wait_for(run_to_end(build_agent(productive_script(), counter)), 30)

    assert str(result).startswith("Answer: Pro plan costs 20 EUR")
    tools = their_tool_spans(observe_loopguard)
    assert len(tools) == 3
    assert ("traceloop.entity.output" in tools[0].attributes) is content
    assert not observe_loopguard.decision_events("stop")
    assert [d for d, _ in observe_loopguard.decided if d.action.value == "stop"] == []
    (run,) = observe_loopguard.named("loopguard.run")
    assert run.attributes["loopguard.run.state"] == "completed"
    assert run.attributes["loopguard.run.tool_calls"] == 3
    assert count("loopguard.internal_errors") == 0


async def test_without_content_a_loop_is_not_claimed(observe_loopguard, monkeypatch) -> None:
    """Content off: their tool spans carry no arguments nor results, so calls never look
    identical (a false STOP is worse than a missed one); they are still counted."""
    monkeypatch.setenv("TRACELOOP_TRACE_CONTENT", "false")
    await asyncio.wait_for(run_to_end(build_agent(looping_script(8), ToolCounter())), 30)

    assert len(their_tool_spans(observe_loopguard)) == 8
    assert [d for d, _ in observe_loopguard.decided if d.action.value == "stop"] == []
    (run,) = observe_loopguard.named("loopguard.run")
    assert run.attributes["loopguard.run.tool_calls"] == 8


async def test_two_invocations_under_one_application_span_are_two_runs(observe_loopguard) -> None:
    count = metric_counter(observe_loopguard)
    with observe_loopguard.app_tracer().start_as_current_span("handle_request"):
        await run_to_end(build_agent(looping_script(8), ToolCounter()))
        await run_to_end(build_agent(productive_script(), ToolCounter()))

    second = assert_stopped_then_completed(observe_loopguard, count)
    first = observe_loopguard.named("loopguard.run")[0]
    assert first.attributes["loopguard.run.tool_calls"] == 8  # each to its last step
    assert second.attributes["loopguard.run.tool_calls"] == 3
