"""The official openai-v2 instrumentation beside our OpenAI package, enforce mode.

Theirs makes the ``chat`` span, ours none (it sees theirs open around the call) but
enforces before each request and reports each answer, once: theirs carries the same
``gen_ai.response.id``. The tools' answers come from their requests' messages.
"""

from __future__ import annotations

import pytest
from hand_written import looping_in_a_run
from loop_checks import assert_budget_stops_the_third_request, assert_productive_counted_once
from otel_loopguard_testing.compat_checks import assert_interrupted_in_each_invocation

OUR_SCOPE = "otel_loopguard_openai"


@pytest.mark.parametrize("invocations", [1, 2])
def test_the_looping_run_is_interrupted_after_at_most_four_executions(
    with_openai_package, invocations
):
    harness = with_openai_package(mode="enforce")

    assert_interrupted_in_each_invocation(harness, invocations, looping_in_a_run(harness))

    ours = [s for s in harness.spans("chat ") if s.instrumentation_scope.name == OUR_SCOPE]
    assert ours == []  # theirs only, never a second chat span of ours


def test_the_productive_run_completes_with_the_real_steps_and_tokens(with_openai_package):
    assert_productive_counted_once(with_openai_package(mode="enforce"))


def test_a_token_budget_stops_at_the_turn_that_goes_over_it(with_openai_package):
    assert_budget_stops_the_third_request(with_openai_package(mode="enforce", token_budget=120))
