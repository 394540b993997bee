"""OpenLLMetry's OpenAI Agents spans alone with our core, observe mode (issue 17)."""

from __future__ import annotations

import pytest
from otel_loopguard_testing.decided import stopped_at, stops
from scripted import productive
from sdk_suite import (
    assert_loop_observed,
    assert_productive_not_stopped,
    assert_two_runs_under_one_span,
    run,
)


def _their_tool_spans(harness):
    return sorted(
        (s for s in harness.spans() if s.attributes.get("traceloop.span.kind") == "tool"),
        key=lambda s: s.start_time,
    )


def test_a_looping_agent_gets_a_stop_within_the_fourth_call(observe_loopguard):
    assert_loop_observed(observe_loopguard, _their_tool_spans)


@pytest.mark.parametrize("sensitive", [True, False], ids=["content-on", "content-off"])
@pytest.mark.parametrize("model", ["chat", "responses"])
def test_a_productive_agent_gets_no_stop(observe_loopguard, monkeypatch, sensitive, model):
    monkeypatch.setenv("TRACELOOP_TRACE_CONTENT", "true" if sensitive else "false")
    assert_productive_not_stopped(observe_loopguard, model, sensitive)


def test_two_invocations_under_one_application_span_are_two_runs(observe_loopguard):
    assert_two_runs_under_one_span(observe_loopguard)


def _chat_spans(harness) -> list:
    return [s for s in harness.spans() if s.attributes.get("gen_ai.operation.name") == "chat"]


def test_core_only_tokens_are_counted_from_their_responses_spans(make_loopguard):
    """Their ``openai.response`` spans of the Responses model carry the usage: a 120-token
    budget (observe mode) gets its STOP with the third turn."""
    harness = make_loopguard(mode="observe", token_budget=120)

    run(productive("responses"))

    assert stopped_at(harness, _chat_spans(harness), "budget") == 3


def test_core_only_their_chat_completions_spans_carry_no_tokens(make_loopguard):
    """With the Chat Completions model their spans have no usage: alone, our core counts the
    steps but no tokens (our OpenAI Agents package beside it counts them)."""
    harness = make_loopguard(mode="observe", token_budget=120, max_steps=3)

    run(productive("chat"))

    decisions = [d for d, _ in stops(harness)]
    assert decisions and all(d.detectors == ("budget",) for d in decisions)
    assert any("model turns" in d.reason for d in decisions)
    assert not any("tokens, over" in d.reason for d in decisions)
