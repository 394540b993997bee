"""The official openai-v2 instrumentation alone with our core, observe mode (issue 17,
point 5): a hand-written loop has only ``chat`` spans; with content capture on, the tools'
calls and results are read from the next request's ``gen_ai.input.messages``."""

from __future__ import annotations

import pytest
from hand_written import ANSWER, content_capture, looping, productive
from loop_checks import assert_loop_observed, assert_tokens_counted, assert_two_runs_under_one_span
from otel_loopguard_testing.decided import stops
from otel_loopguard_testing.metrics import metric_counter


def _chat_spans(harness) -> list:
    return harness.spans("chat ")


def test_a_looping_hand_written_loop_gets_a_stop_within_the_fourth_call(observe_loopguard):
    assert_loop_observed(observe_loopguard, _chat_spans)


@pytest.mark.parametrize("content", [True, False], ids=["content-on", "content-off"])
def test_a_productive_loop_gets_no_stop(observe_loopguard, content):
    errors = metric_counter(observe_loopguard)
    loop = productive()

    with (
        content_capture(observe_loopguard, content),
        observe_loopguard.app_tracer().start_as_current_span("agent loop"),
    ):
        assert loop.run() == ANSWER

    assert len(observe_loopguard.spans("chat ")) == 5
    if content:
        assert "gen_ai.input.messages" in observe_loopguard.spans("chat ")[-1].attributes
    assert stops(observe_loopguard) == []
    assert errors("loopguard.internal_errors") == 0


def test_without_content_the_loop_is_counted_not_claimed(observe_loopguard):
    """Content off: the requests hold no messages; the turns still count (budgets work),
    but nothing says the calls were the same: no STOP from them."""
    loop = looping()

    with (
        content_capture(observe_loopguard, False),
        observe_loopguard.app_tracer().start_as_current_span("agent loop"),
    ):
        loop.run()

    assert all("gen_ai.input.messages" not in s.attributes for s in observe_loopguard.spans())
    assert stops(observe_loopguard) == []


def test_two_invocations_under_one_application_span_are_two_runs(observe_loopguard):
    assert_two_runs_under_one_span(observe_loopguard)


def test_tokens_are_counted_from_their_chat_spans(make_loopguard):
    assert_tokens_counted(make_loopguard(mode="observe", token_budget=120), _chat_spans)
