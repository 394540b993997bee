"""OpenLLMetry's OpenAI Agents instrumentation beside our OpenAI Agents package, enforce mode.

Both see every tool execution; each model turn is our package's to report unless a span
below reports it, and theirs (``openai.response``, ``gen_ai.operation.name=chat``) carries
no usage with the Chat Completions model, nor with sensitive data left out of the SDK's
traces (issue 17, point 1): a model span without usage must not silence our report of the
turn, or token budgets are silently off.
"""

from __future__ import annotations

import pytest
from otel_loopguard_testing.compat_checks import assert_interrupted_in_each_invocation
from scripted import looping
from sdk_suite import assert_budget_stops_the_third_turn, assert_productive_counted_once, run


@pytest.mark.parametrize("sensitive", [True, False], ids=["content-on", "content-off"])
@pytest.mark.parametrize("invocations", [1, 2])
def test_the_looping_run_is_interrupted_after_at_most_four_executions(
    with_our_package, invocations, sensitive
):
    """Content off too: our gate's spans carry the signatures their spans lack."""

    def start():
        scenario = looping()
        return lambda: run(scenario, sensitive=sensitive), lambda: len(scenario.executions)

    assert_interrupted_in_each_invocation(with_our_package(mode="enforce"), invocations, start)


@pytest.mark.parametrize(
    ("model", "sensitive"),
    [("chat", True), ("chat", False), ("responses", True), ("responses", False)],
    ids=["chat", "chat-no-data", "responses", "responses-no-data"],
)
def test_the_productive_run_counts_the_real_steps_and_tokens(with_our_package, model, sensitive):
    assert_productive_counted_once(with_our_package(mode="enforce"), model, sensitive)


@pytest.mark.parametrize("model", ["chat", "responses"])
def test_a_token_budget_stops_at_the_turn_that_goes_over_it(with_our_package, model):
    harness = with_our_package(mode="enforce", token_budget=120)
    assert_budget_stops_the_third_turn(harness, model, sensitive=True)
