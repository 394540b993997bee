"""Our LlamaIndex package beside OpenLLMetry's LlamaIndex instrumentation, enforce mode.

Both see every tool execution and model turn: their ``FunctionTool.task`` span hangs under
their own ``call_tool`` task span, not inside our gate's span, so one execution is told
apart by the tool's name (in their result) and the time; their model spans carry no usage.
Each must count once.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from agents import (
    ToolCounter,
    build_agent,
    build_usage_agent,
    looping_run,
    productive_script,
    run_to_end,
)
from conftest import their_tool_spans
from opentelemetry import trace
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.compat_checks import (
    assert_budget_exceeded,
    assert_completed_unstopped,
)

from otel_loopguard import LoopGuardInterrupt

#: their spans of a failed run: their span handler ends a span only when its method returns
#: (``prepare_to_drop_span`` ends none), for a run failing for any reason, our interrupt too
THEIRS_LEFT_OPEN = ["BaseWorkflowAgent.task", "FunctionAgent.workflow"]


def test_a_looping_agent_is_interrupted_in_every_invocation(with_our_package, content) -> None:
    """Content off too: our gate's own judgement does not need their content."""
    harness = with_our_package(mode="enforce")
    count = metric_counter(harness)
    for _ in range(2):
        run, executed = looping_run()
        with pytest.raises(LoopGuardInterrupt) as stopped:
            run()
        assert "no_progress" in stopped.value.decision.detectors
        assert 1 <= executed() <= 4, executed()
        assert not trace.get_current_span().get_span_context().is_valid  # nothing attached
    runs = harness.named("invoke_agent support_agent")
    assert [s.attributes["loopguard.run.state"] for s in runs] == ["stopped"] * 2
    assert count("loopguard.runs") == 2
    assert sorted(harness.open_spans()) == sorted(THEIRS_LEFT_OPEN * 2)  # none of ours
    assert count("loopguard.internal_errors") == 0


async def test_a_productive_agent_completes_with_the_same_answer(with_our_package) -> None:
    harness = with_our_package(mode="enforce")
    count = metric_counter(harness)
    counter = ToolCounter()
    result = await asyncio.wait_for(run_to_end(build_agent(productive_script(), counter)), 30)
    assert str(result).startswith("Answer: Pro plan costs 20 EUR")
    assert counter["lookup"] == 3
    assert len(their_tool_spans(harness)) == 3
    assert_completed_unstopped(harness, count, "support_agent")


@pytest.mark.usefixtures("content")
async def test_steps_and_tokens_on_the_agent_span_are_the_real_ones(with_our_package) -> None:
    """4 turns and 3 tool calls fit limits of exactly that: counted twice (their span and
    our gate, content on or off) the run would be stopped halfway."""
    harness = with_our_package(mode="enforce", max_steps=4, max_tool_calls=3)
    count = metric_counter(harness)
    agent, llm = build_usage_agent(productive_script(), ToolCounter())
    await asyncio.wait_for(run_to_end(agent), 30)
    assert llm.calls == 4
    assert len(their_tool_spans(harness)) == 3
    assert harness.run_usage("support_agent") == (240, 40)  # 4 turns of 60 + 10
    assert_completed_unstopped(harness, count, "support_agent")


async def test_a_token_budget_stops_at_the_right_turn(with_our_package) -> None:
    harness = with_our_package(mode="enforce", token_budget=150)  # 70 a turn: the 3rd goes over
    count = metric_counter(harness)
    agent, llm = build_usage_agent(productive_script(), ToolCounter())
    with pytest.raises(LoopGuardInterrupt) as stopped:
        await asyncio.wait_for(run_to_end(agent), 30)
    assert llm.calls == 3  # counted twice, it would stop after the 2nd
    assert_budget_exceeded(harness, count, stopped, "support_agent", (180, 30))


def test_with_ours_instrumented_first_nothing_raises_into_the_agent() -> None:
    """The suite's session instruments theirs before ours; the other order, in a process of
    its own: the looping agent is interrupted (nothing else raised), the productive one
    answers, their spans are still made, no internal error."""
    program = Path(__file__).parent / "programs" / "ours_first.py"
    tests = Path(__file__).resolve().parents[3] / "instrumentation/llamaindex/tests"
    done = subprocess.run(
        [sys.executable, "-W", "ignore", str(program), str(tests)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome["looping"] == "interrupted"
    assert 1 <= outcome["executions"] <= 4
    assert outcome["answer"].startswith("Answer: Pro plan costs 20 EUR")
    assert outcome["their_tool_spans"] == 3 + outcome["executions"]
    assert outcome["internal_errors"] == 0
