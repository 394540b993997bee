"""pydantic-ai with its own OpenTelemetry instrumentation on (``instrument=True``).

pydantic-ai then emits ``invoke_agent`` and ``execute_tool`` spans itself. We must not add
a second span for the same call, and must still stop the loop: the span processor maps
pydantic-ai's spans to events, our wrapper enforces around the call.
"""

from __future__ import annotations

import pytest
from pydantic_ai.models.instrumented import InstrumentationSettings
from scripted_agents import FINAL_ANSWER, looping_agent, productive_agent

from otel_loopguard import LoopGuardInterrupt

QUESTION = "What does it cost?"


def _own_spans(loopguard) -> InstrumentationSettings:
    """pydantic-ai's instrumentation, sending to the test's (non-global) tracer provider."""
    return InstrumentationSettings(tracer_provider=loopguard.provider)


def _scopes(spans) -> set[str]:
    return {span.instrumentation_scope.name for span in spans}


def test_looping_instrumented_agent_is_stopped_without_duplicate_spans(loopguard):
    scenario = looping_agent(instrument=_own_spans(loopguard))

    with pytest.raises(LoopGuardInterrupt):
        scenario.agent.run_sync(QUESTION)

    assert 1 <= len(scenario.executions) <= 4
    tool_spans = loopguard.tool_spans("search")
    # pydantic-ai's span per execution, none of ours next to it
    assert len(tool_spans) == len(scenario.executions)
    assert _scopes(tool_spans) == {"pydantic-ai"}
    agent_spans = loopguard.named("invoke_agent researcher")
    assert len(agent_spans) == 1 and _scopes(agent_spans) == {"pydantic-ai"}
    assert loopguard.decision_events("stop"), "the STOP decision is on the run's agent span"
    loopguard.assert_every_span_ended_once()


def test_productive_instrumented_agent_is_untouched(loopguard):
    scenario = productive_agent(instrument=_own_spans(loopguard))

    result = scenario.agent.run_sync(QUESTION)

    assert result.output == FINAL_ANSWER
    assert len(loopguard.tool_spans("search")) == 4
    assert loopguard.decision_events("stop") == []


def test_streamed_instrumented_agent_is_stopped(loopguard):
    import asyncio

    scenario = looping_agent(instrument=_own_spans(loopguard))

    async def drive() -> None:
        async with scenario.agent.run_stream(QUESTION) as streamed:
            async for _text in streamed.stream_output():
                pass

    with pytest.raises(LoopGuardInterrupt):
        asyncio.run(drive())

    assert 1 <= len(scenario.executions) <= 4
    loopguard.assert_every_span_ended_once()
