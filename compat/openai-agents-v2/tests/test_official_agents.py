"""The official OpenAI Agents instrumentation: ``invoke_agent``, ``chat`` and
``execute_tool`` spans of the GenAI conventions, with our core alone (observe mode) and
beside our OpenAI Agents package (enforce mode). With sensitive data off its ``chat`` spans
carry no usage: our package's report of the turn counts (issue 17, point 1)."""

from __future__ import annotations

import pytest
from otel_loopguard_testing.compat_checks import assert_interrupted_in_each_invocation
from otel_loopguard_testing.decided import stopped_at
from scripted import looping, productive
from sdk_suite import (
    OURS,
    assert_budget_stops_the_third_turn,
    assert_loop_observed,
    assert_productive_counted_once,
    assert_productive_not_stopped,
    assert_two_runs_under_one_span,
    run,
)


def _their_tool_spans(harness):
    spans = [s for s in harness.tool_spans("search") if s.instrumentation_scope.name != OURS]
    return sorted(spans, key=lambda s: s.start_time)


def test_core_only_a_looping_agent_gets_a_stop_within_the_fourth_call(observe_loopguard):
    assert_loop_observed(observe_loopguard, _their_tool_spans)


@pytest.mark.parametrize("sensitive", [True, False], ids=["content-on", "content-off"])
@pytest.mark.parametrize("model", ["chat", "responses"])
def test_core_only_a_productive_agent_gets_no_stop(observe_loopguard, sensitive, model):
    assert_productive_not_stopped(observe_loopguard, model, sensitive)


def test_core_only_two_invocations_under_one_application_span_are_two_runs(observe_loopguard):
    assert_two_runs_under_one_span(observe_loopguard)


@pytest.mark.parametrize("invocations", [1, 2])
def test_beside_our_package_the_loop_is_interrupted_after_at_most_four_executions(
    with_our_package, invocations
):
    def start():
        scenario = looping()
        return lambda: run(scenario), lambda: len(scenario.executions)

    assert_interrupted_in_each_invocation(with_our_package(mode="enforce"), invocations, start)


@pytest.mark.parametrize("sensitive", [True, False], ids=["content-on", "content-off"])
@pytest.mark.parametrize("model", ["chat", "responses"])
def test_beside_our_package_the_productive_run_counts_the_real_tokens(
    with_our_package, model, sensitive
):
    assert_productive_counted_once(with_our_package(mode="enforce"), model, sensitive)


@pytest.mark.parametrize("sensitive", [True, False], ids=["content-on", "content-off"])
def test_beside_our_package_a_token_budget_stops_at_the_turn_over_it(with_our_package, sensitive):
    harness = with_our_package(mode="enforce", token_budget=120)
    assert_budget_stops_the_third_turn(harness, "responses", sensitive)


@pytest.mark.parametrize("model", ["chat", "responses"])
def test_core_only_tokens_are_counted_from_their_chat_spans(make_loopguard, model):
    harness = make_loopguard(mode="observe", token_budget=120)

    run(productive(model))

    chats = [s for s in harness.spans() if s.attributes.get("gen_ai.operation.name") == "chat"]
    assert stopped_at(harness, chats, "budget") == 3
