"""Our LlamaIndex package beside OpenInference's LlamaIndex instrumentation, enforce mode."""

from __future__ import annotations

import asyncio

import pytest
from agents import (
    ToolCounter,
    build_agent,
    build_usage_agent,
    looping_run,
    productive_script,
    run_to_end,
)
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.compat_checks import (
    assert_budget_exceeded,
    assert_completed_unstopped,
    assert_interrupted,
)

from otel_loopguard import LoopGuardInterrupt


def test_a_looping_agent_is_interrupted_in_every_invocation(beside_ours) -> None:
    harness = beside_ours(mode="enforce")
    assert_interrupted(harness, looping_run, invocations=2, agent="support_agent")


async def test_a_productive_agent_completes_with_the_same_answer(beside_ours) -> None:
    harness = beside_ours(mode="enforce")
    count = metric_counter(harness)
    counter = ToolCounter()
    result = await asyncio.wait_for(run_to_end(build_agent(productive_script(), counter)), 30)
    assert str(result).startswith("Answer: Pro plan costs 20 EUR")
    assert counter["lookup"] == 3
    assert_completed_unstopped(harness, count, "support_agent")


async def test_steps_and_tokens_on_the_agent_span_are_the_real_ones(beside_ours) -> None:
    harness = beside_ours(mode="enforce")
    count = metric_counter(harness)
    agent, llm = build_usage_agent(productive_script(), ToolCounter())
    await asyncio.wait_for(run_to_end(agent), 30)
    assert llm.calls == 4
    assert harness.run_usage("support_agent") == (240, 40)  # 4 turns of 60 + 10
    assert count("loopguard.internal_errors") == 0


async def test_a_token_budget_stops_at_the_right_turn(beside_ours) -> None:
    harness = beside_ours(mode="enforce", token_budget=150)  # 70 a turn: the 3rd goes over
    count = metric_counter(harness)
    counter = ToolCounter()
    agent, llm = build_usage_agent(productive_script(), counter)
    with pytest.raises(LoopGuardInterrupt) as stopped:
        await asyncio.wait_for(run_to_end(agent), 30)
    assert llm.calls == 3  # counted twice, it would stop after the 2nd
    assert_budget_exceeded(harness, count, stopped, "support_agent", (180, 30))


def test_with_their_content_hidden_the_looping_agent_is_interrupted_too(
    content_hidden, beside_ours
) -> None:
    assert_interrupted(beside_ours(mode="enforce"), looping_run, agent="support_agent")
