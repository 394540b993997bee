"""Our core alone beside OpenInference's LlamaIndex instrumentation, observe mode."""

from __future__ import annotations

import asyncio

from agents import (
    ToolCounter,
    build_agent,
    build_usage_agent,
    looping_run,
    looping_script,
    productive_script,
    run_to_end,
)
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.compat_checks import (
    assert_loop_observed,
    assert_no_stop_on_their_tools,
    assert_stopped_then_completed,
)


def test_a_looping_agent_is_stopped_within_the_fourth_call(observe_loopguard) -> None:
    result = assert_loop_observed(observe_loopguard, lambda: looping_run(8), executions=8)
    assert str(result) == "I could not find the price."


async def test_a_productive_agent_gets_no_stop(observe_loopguard, hidden: bool) -> None:
    count = metric_counter(observe_loopguard)
    counter = ToolCounter()
    result = await asyncio.wait_for(run_to_end(build_agent(productive_script(), counter)), 30)

    assert str(result).startswith("Answer: Pro plan costs 20 EUR")
    tools = [s for s in observe_loopguard.spans() if s.attributes.get("tool.name") == "lookup"]
    assert_no_stop_on_their_tools(observe_loopguard, count, tools, 3, hidden)


async def test_each_model_turn_counts_once(observe_loopguard) -> None:
    """Their ``achat`` span around their ``chat`` span, and the request's preparation
    (``_prepare_chat_with_tools``), are one model turn: 4 turns of 60 + 10 tokens."""
    counter = ToolCounter()
    agent, llm = build_usage_agent(productive_script(), counter)
    await asyncio.wait_for(run_to_end(agent), 30)
    assert llm.calls == 4
    (run,) = observe_loopguard.named("loopguard.run")
    assert run.attributes["loopguard.run.steps"] == 4
    assert run.attributes["loopguard.run.tool_calls"] == 3


async def test_two_invocations_under_one_application_span_are_two_runs(observe_loopguard) -> None:
    count = metric_counter(observe_loopguard)
    with observe_loopguard.app_tracer().start_as_current_span("handle_request"):
        await run_to_end(build_agent(looping_script(8), ToolCounter()))
        await run_to_end(build_agent(productive_script(), ToolCounter()))

    assert_stopped_then_completed(observe_loopguard, count)
