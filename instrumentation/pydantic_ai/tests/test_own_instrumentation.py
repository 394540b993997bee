"""pydantic-ai with its own OpenTelemetry instrumentation on (``instrument=True``).

pydantic-ai then emits ``invoke_agent``, ``chat`` and ``execute_tool`` spans itself. We must
not add a second span for the same call, and must still stop the loop: the span processor
maps pydantic-ai's spans to events, our wrappers enforce around the calls. A model turn is
counted once: by the processor from pydantic-ai's ``chat`` span, never again by our
model-request wrapper.
"""

from __future__ import annotations

import asyncio

import pytest
from pydantic_ai.models.instrumented import InstrumentationSettings, InstrumentedModel
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


def _chat_spans(loopguard):
    return [s for s in loopguard.spans("chat ") if s.instrumentation_scope.name == "pydantic-ai"]


# 50 tokens a turn: three turns fit (150), a turn counted twice would not (200 after two)
TURN_USAGE = (40, 10)
TOKEN_BUDGET = 160


def _drive(scenario, how: str, **run_kwargs) -> None:
    async def stream() -> None:
        async with scenario.agent.run_stream(QUESTION, **run_kwargs) as streamed:
            await streamed.get_output()

    if how == "run_stream":
        asyncio.run(stream())
    else:
        scenario.agent.run_sync(QUESTION, **run_kwargs)


@pytest.mark.parametrize("how", ["run_sync", "run_stream"])
def test_each_turn_counts_once_and_no_request_goes_past_max_steps(make_loopguard, how):
    """Without a run of ours the processor counts the turns from pydantic-ai's ``chat``
    spans (once each: a second count would reach the token budget or ``max_steps`` a turn
    early); our wrapper vetoes the request past ``max_steps`` before it is sent."""
    # a streamed FunctionModel estimates its usage (about 55 tokens a turn): no budget then
    budget = TOKEN_BUDGET if how == "run_sync" else 0
    loopguard = make_loopguard(mode="enforce", max_steps=3, token_budget=budget)
    scenario = productive_agent(instrument=_own_spans(loopguard), usage=TURN_USAGE)

    with pytest.raises(LoopGuardInterrupt) as raised:
        _drive(scenario, how)

    assert [signal.kind for signal in raised.value.decision.reasons] == ["steps"]
    assert len(scenario.model_calls) == 3
    assert len(_chat_spans(loopguard)) == 3
    assert len(scenario.executions) == 3
    assert _scopes(loopguard.agent_spans()) == {"pydantic-ai"}
    loopguard.assert_every_span_ended_once()


def test_an_instrumented_model_given_to_the_run_gets_pydantic_ai_spans_only(make_loopguard):
    """``InstrumentedModel`` (what ``logfire.instrument_pydantic_ai(model)`` makes) turns
    pydantic-ai's own instrumentation on for that run: we add no agent span of our own
    and still enforce ``max_steps`` before the request."""
    loopguard = make_loopguard(mode="enforce", max_steps=3)
    scenario = productive_agent(usage=TURN_USAGE)
    model = InstrumentedModel(scenario.model, _own_spans(loopguard))

    with pytest.raises(LoopGuardInterrupt):
        scenario.agent.run_sync(QUESTION, model=model)

    assert len(scenario.model_calls) == 3
    assert len(loopguard.named("invoke_agent researcher")) == 1
    assert _scopes(loopguard.agent_spans()) == {"pydantic-ai"}
    assert len(_chat_spans(loopguard)) == 3
    loopguard.assert_every_span_ended_once()
