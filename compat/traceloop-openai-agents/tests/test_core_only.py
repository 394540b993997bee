"""OpenLLMetry's OpenAI Agents spans alone with our core, observe mode (issue 17)."""

from __future__ import annotations

import asyncio

import pytest
from agents import RunConfig, Runner
from otel_loopguard_testing.decided import calls_before_stop, stopped_at
from otel_loopguard_testing.metrics import metric_counter
from scripted import ANSWER, LOOP_TURNS, QUERIES, looping, productive


def _stops(harness) -> list:
    return [(d, e) for d, e in harness.decided if d.action.value == "stop"]


def _their_tool_spans(harness):
    return sorted(
        (s for s in harness.spans() if s.attributes.get("traceloop.span.kind") == "tool"),
        key=lambda s: s.start_time,
    )


def _run(scenario, *, sensitive: bool = True):
    config = RunConfig(trace_include_sensitive_data=sensitive)
    return asyncio.run(Runner.run(scenario.agent, "What does it cost?", run_config=config))


def test_a_looping_agent_gets_a_stop_within_the_fourth_call(observe_loopguard):
    errors = metric_counter(observe_loopguard)
    scenario = looping()

    result = _run(scenario, sensitive=True)

    assert result.final_output == "I gave up."  # observe mode: recorded, not enforced
    assert len(scenario.executions) == LOOP_TURNS
    tools = _their_tool_spans(observe_loopguard)
    assert len(tools) == LOOP_TURNS
    calls = calls_before_stop(observe_loopguard, tools)
    assert calls is not None and calls <= 4, calls
    assert errors("loopguard.internal_errors") == 0


@pytest.mark.parametrize("sensitive", [True, False], ids=["content-on", "content-off"])
@pytest.mark.parametrize("model", ["chat", "responses"])
def test_a_productive_agent_gets_no_stop(observe_loopguard, monkeypatch, sensitive, model):
    monkeypatch.setenv("TRACELOOP_TRACE_CONTENT", "true" if sensitive else "false")
    errors = metric_counter(observe_loopguard)
    scenario = productive(model)

    assert _run(scenario, sensitive=sensitive).final_output == ANSWER

    assert scenario.executions == list(QUERIES)
    assert _stops(observe_loopguard) == []
    assert errors("loopguard.internal_errors") == 0


def test_two_invocations_under_one_application_span_are_two_runs(observe_loopguard):
    tracer = observe_loopguard.app_tracer()

    with tracer.start_as_current_span("handle request"):
        for _ in range(2):
            _run(looping())

    assert len({event.run_id for _, event in _stops(observe_loopguard)}) == 2


def _chat_spans(harness) -> list:
    return [s for s in harness.spans() if s.attributes.get("gen_ai.operation.name") == "chat"]


def test_core_only_tokens_are_counted_from_their_responses_spans(make_loopguard):
    """Their ``openai.response`` spans of the Responses model carry the usage: a 120-token
    budget (observe mode) gets its STOP with the third turn."""
    harness = make_loopguard(mode="observe", token_budget=120)

    _run(productive("responses"))

    assert stopped_at(harness, _chat_spans(harness), "budget") == 3


def test_core_only_their_chat_completions_spans_carry_no_tokens(make_loopguard):
    """With the Chat Completions model their spans have no usage: alone, our core counts the
    steps but no tokens (our OpenAI Agents package beside it counts them)."""
    harness = make_loopguard(mode="observe", token_budget=120, max_steps=3)

    _run(productive("chat"))

    stops = [d for d, _ in harness.decided if d.action.value == "stop"]
    assert stops and all(d.detectors == ("budget",) for d in stops)
    assert any("model turns" in d.reason for d in stops)
    assert not any("tokens, over" in d.reason for d in stops)
