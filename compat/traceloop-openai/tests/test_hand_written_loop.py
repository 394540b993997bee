"""OpenLLMetry's OpenAI ``openai.chat`` spans around a hand-written loop whose tools are
plain application code (issue 17, point 5): like the official instrumentation's, its
requests carry the tools' calls and results in ``gen_ai.input.messages``
(``tool_call_response`` parts), read as the executions they describe."""

from __future__ import annotations

import pytest
from hand_written import ANSWER, looping_in_a_run, productive
from loop_checks import (
    assert_budget_stops_the_third_request,
    assert_loop_observed,
    assert_productive_counted_once,
    assert_tokens_counted,
    assert_two_runs_under_one_span,
)
from otel_loopguard_testing.compat_checks import assert_interrupted_in_each_invocation
from otel_loopguard_testing.decided import stops
from otel_loopguard_testing.metrics import metric_counter


@pytest.fixture(params=["content-on", "content-off"])
def content(request, monkeypatch) -> bool:
    """Traceloop's content capture (``TRACELOOP_TRACE_CONTENT``, read per request)."""
    on = request.param == "content-on"
    monkeypatch.setenv("TRACELOOP_TRACE_CONTENT", "true" if on else "false")
    return on


def _chat_spans(harness) -> list:
    return harness.spans("openai.chat")


def test_core_only_a_looping_loop_gets_a_stop_within_the_fourth_call(observe_loopguard):
    assert_loop_observed(observe_loopguard, _chat_spans)


def test_core_only_a_productive_loop_gets_no_stop(observe_loopguard, content):
    errors = metric_counter(observe_loopguard)

    with observe_loopguard.app_tracer().start_as_current_span("agent loop"):
        assert productive().run() == ANSWER

    chats = _chat_spans(observe_loopguard)
    assert len(chats) == 5
    assert ("gen_ai.input.messages" in chats[-1].attributes) is content
    assert stops(observe_loopguard) == []
    assert errors("loopguard.internal_errors") == 0


def test_core_only_two_invocations_under_one_application_span_are_two_runs(observe_loopguard):
    assert_two_runs_under_one_span(observe_loopguard)


@pytest.mark.parametrize("invocations", [1, 2])
def test_beside_our_package_the_loop_is_interrupted_after_at_most_four_executions(
    with_openai_package, invocations
):
    harness = with_openai_package(mode="enforce")

    assert_interrupted_in_each_invocation(harness, invocations, looping_in_a_run(harness))


def test_beside_our_package_the_productive_run_counts_the_real_tokens(with_openai_package):
    assert_productive_counted_once(with_openai_package(mode="enforce"))


def test_beside_our_package_a_token_budget_stops_at_the_turn_over_it(with_openai_package):
    assert_budget_stops_the_third_request(with_openai_package(mode="enforce", token_budget=120))


def test_core_only_tokens_are_counted_from_their_chat_spans(make_loopguard):
    assert_tokens_counted(make_loopguard(mode="observe", token_budget=120), _chat_spans)
