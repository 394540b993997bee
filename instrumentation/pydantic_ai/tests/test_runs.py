"""End-to-end runs of real pydantic-ai agents (FunctionModel, no network)."""

from __future__ import annotations

import asyncio

import pytest
from opentelemetry.trace import StatusCode
from otel_loopguard_testing import agent_checks as checks
from pydantic_ai import ModelRetry
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel
from scripted_agents import FINAL_ANSWER, LOOP_STEPS, looping_agent, productive_agent

from otel_loopguard import LoopGuardInterrupt

MAX_EXECUTIONS = 4
QUESTION = "What does it cost?"


def test_looping_run_is_interrupted_in_enforce_mode(loopguard):
    scenario = looping_agent()

    with pytest.raises(LoopGuardInterrupt) as raised:
        scenario.agent.run_sync(QUESTION)

    checks.assert_loop_interrupted(loopguard, len(scenario.executions), raised)


def test_async_run_is_interrupted_too(loopguard):
    scenario = looping_agent()

    with pytest.raises(LoopGuardInterrupt):
        asyncio.run(scenario.agent.run(QUESTION))

    assert 1 <= len(scenario.executions) <= MAX_EXECUTIONS
    loopguard.assert_every_span_ended_once()


def test_looping_run_in_observe_mode_runs_to_its_end(observe_loopguard):
    scenario = looping_agent()

    result = scenario.agent.run_sync(QUESTION)

    assert result.output == "I could not find anything."
    assert len(scenario.executions) == LOOP_STEPS
    assert len(observe_loopguard.tool_spans("search")) == LOOP_STEPS
    assert observe_loopguard.decision_events("stop"), "observe mode still records the STOP decision"
    observe_loopguard.assert_every_span_ended_once()


def test_productive_run_completes_untouched(loopguard):
    baseline_scenario = productive_agent()
    baseline = loopguard.baseline(lambda: baseline_scenario.agent.run_sync(QUESTION).output)

    scenario = productive_agent()
    result = scenario.agent.run_sync(QUESTION)

    assert baseline == FINAL_ANSWER
    assert result.output == baseline
    assert scenario.executions == baseline_scenario.executions
    assert loopguard.decision_events("stop") == []
    loopguard.assert_every_span_ended_once()


def test_spans_follow_the_genai_conventions(loopguard):
    scenario = productive_agent()
    scenario.agent.run_sync(QUESTION)

    checks.assert_genai_agent_and_tool_spans(loopguard, scenario.executions)


def test_a_failing_tool_is_an_error_span_and_the_error_reaches_the_caller(loopguard):
    scenario = looping_agent()

    @scenario.agent.tool_plain
    def fetch(url: str) -> str:
        """Fetch a page."""
        raise PermissionError("403 permission denied")

    def respond(messages, info):
        return ModelResponse(parts=[ToolCallPart("fetch", {"url": "/admin"})])

    with pytest.raises(PermissionError):
        scenario.agent.run_sync(QUESTION, model=FunctionModel(respond))

    (span,) = loopguard.tool_spans("fetch")
    assert span.attributes["error.type"] == "PermissionError"
    assert span.status.status_code is StatusCode.ERROR
    assert loopguard.run_state("researcher") == "error"
    loopguard.assert_every_span_ended_once()


def test_the_same_permanent_error_retried_is_stopped(loopguard):
    executions: list[str] = []
    scenario = looping_agent()

    @scenario.agent.tool_plain(retries=20)
    def fetch(url: str) -> str:
        """Fetch a page."""
        executions.append(url)
        raise ModelRetry("403 permission denied for /admin")

    def respond(messages, info):
        if len(executions) < 10:
            return ModelResponse(parts=[ToolCallPart("fetch", {"url": "/admin"})])
        return ModelResponse(parts=[TextPart("gave up")])

    with pytest.raises(LoopGuardInterrupt):
        scenario.agent.run_sync(QUESTION, model=FunctionModel(respond))

    assert 1 <= len(executions) <= MAX_EXECUTIONS
    assert all(s.status.status_code is StatusCode.ERROR for s in loopguard.tool_spans("fetch"))
    loopguard.assert_every_span_ended_once()


@pytest.mark.parametrize("how", ["run_stream", "iter", "run_stream_events"])
def test_streamed_looping_run_is_interrupted_and_leaves_no_span_open(loopguard, how):
    scenario = looping_agent()

    async def drive() -> None:
        agent = scenario.agent
        if how == "run_stream":
            async with agent.run_stream(QUESTION) as streamed:
                async for _text in streamed.stream_output():
                    pass
        elif how == "iter":
            async with agent.iter(QUESTION) as run:
                async for _node in run:
                    pass
        else:
            async with agent.run_stream_events(QUESTION) as events:
                async for _event in events:
                    pass

    with pytest.raises(LoopGuardInterrupt):
        asyncio.run(drive())

    checks.assert_loop_interrupted(loopguard, len(scenario.executions))


def test_stream_closed_early_ends_its_spans(loopguard):
    scenario = productive_agent()

    async def read_first_event_then_leave() -> None:
        async with scenario.agent.run_stream_events(QUESTION) as events:
            async for _event in events:
                break

    asyncio.run(read_first_event_then_leave())

    assert loopguard.run_state("researcher") == "cancelled"
    loopguard.assert_every_span_ended_once()


def test_streamed_productive_run_gives_the_same_answer(loopguard):
    scenario = productive_agent()

    async def drive() -> str:
        async with scenario.agent.run_stream(QUESTION) as streamed:
            return await streamed.get_output()

    assert asyncio.run(drive()) == FINAL_ANSWER
    assert len(loopguard.tool_spans("search")) == 4
    loopguard.assert_every_span_ended_once()


def test_parallel_identical_calls_in_one_step_are_stopped(loopguard):
    """Two identical calls per model step run concurrently; the interrupt still wins."""
    scenario = looping_agent()
    twice = [ToolCallPart("search", {"query": "pricing"}) for _ in range(2)]

    def respond(messages, info):
        return ModelResponse(parts=list(twice))

    with pytest.raises(LoopGuardInterrupt):
        scenario.agent.run_sync(QUESTION, model=FunctionModel(respond))

    assert 1 <= len(scenario.executions) <= MAX_EXECUTIONS
    loopguard.assert_every_span_ended_once()
