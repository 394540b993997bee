"""OpenLLMetry's OpenAI Agents instrumentation beside our OpenAI Agents package, enforce mode.

Both see every tool execution; each model turn is our package's to report unless a span
below reports it, and theirs (``openai.response``, ``gen_ai.operation.name=chat``) carries
no usage with the Chat Completions model, nor with sensitive data left out of the SDK's
traces (issue 17, point 1): a model span without usage must not silence our report of the
turn, or token budgets are silently off.
"""

from __future__ import annotations

import asyncio

import pytest
from agents import RunConfig, Runner
from otel_loopguard_testing.compat_checks import assert_interrupted_in_each_invocation
from otel_loopguard_testing.metrics import metric_counter
from scripted import ANSWER, USAGE, looping, productive

from otel_loopguard import LoopGuardInterrupt

OUR_SCOPE = "otel_loopguard_openai_agents"


def _run(scenario, *, sensitive: bool = True):
    config = RunConfig(trace_include_sensitive_data=sensitive)
    return asyncio.run(Runner.run(scenario.agent, "What does it cost?", run_config=config))


def _our_run(harness):
    (span,) = [
        s
        for s in harness.named("invoke_agent researcher")
        if s.instrumentation_scope.name == OUR_SCOPE
    ]
    return span


@pytest.mark.parametrize("sensitive", [True, False], ids=["content-on", "content-off"])
@pytest.mark.parametrize("invocations", [1, 2])
def test_the_looping_run_is_interrupted_after_at_most_four_executions(
    with_our_package, invocations, sensitive
):
    """Content off too: our gate's spans carry the signatures their spans lack."""

    def start():
        scenario = looping()
        return lambda: _run(scenario, sensitive=sensitive), lambda: len(scenario.executions)

    assert_interrupted_in_each_invocation(with_our_package(mode="enforce"), invocations, start)


@pytest.mark.parametrize(
    ("model", "sensitive"),
    [("chat", True), ("chat", False), ("responses", True), ("responses", False)],
    ids=["chat", "chat-no-data", "responses", "responses-no-data"],
)
def test_the_productive_run_counts_the_real_steps_and_tokens(with_our_package, model, sensitive):
    harness = with_our_package(mode="enforce")
    errors = metric_counter(harness)
    scenario = productive(model)

    assert _run(scenario, sensitive=sensitive).final_output == ANSWER

    run = _our_run(harness)
    assert run.attributes["loopguard.run.state"] == "completed"
    # five turns, each counted once, whoever reported it
    assert run.attributes["gen_ai.usage.input_tokens"] == 5 * USAGE[0]
    assert run.attributes["gen_ai.usage.output_tokens"] == 5 * USAGE[1]
    assert errors("loopguard.internal_errors") == 0


@pytest.mark.parametrize("model", ["chat", "responses"])
def test_a_token_budget_stops_at_the_turn_that_goes_over_it(with_our_package, model):
    # 50 tokens a turn: the third goes over 120 (uncounted, never; counted twice, the second)
    harness = with_our_package(mode="enforce", token_budget=120)
    scenario = productive(model)

    with pytest.raises(LoopGuardInterrupt) as raised:
        _run(scenario)

    assert raised.value.decision.detectors == ("budget",)
    assert len(scenario.api.requests) == 3
    assert len(scenario.executions) == 2  # the third turn's search never ran
    run = _our_run(harness)
    assert run.attributes["loopguard.run.state"] == "budget_exceeded"
    assert run.attributes["gen_ai.usage.input_tokens"] == 3 * USAGE[0]
