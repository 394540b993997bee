"""The official OpenAI Agents instrumentation: ``invoke_agent``, ``chat`` and
``execute_tool`` spans of the GenAI conventions, with our core alone (observe mode) and
beside our OpenAI Agents package (enforce mode). With sensitive data off its ``chat`` spans
carry no usage: our package's report of the turn counts (issue 17, point 1)."""

from __future__ import annotations

import asyncio

import pytest
from agents import RunConfig, Runner
from otel_loopguard_testing.compat_checks import assert_interrupted_in_each_invocation
from otel_loopguard_testing.decided import calls_before_stop, stopped_at
from otel_loopguard_testing.metrics import metric_counter
from scripted import ANSWER, LOOP_TURNS, QUERIES, USAGE, looping, productive

from otel_loopguard import LoopGuardInterrupt


def _run(scenario, *, sensitive: bool = True):
    config = RunConfig(trace_include_sensitive_data=sensitive)
    return asyncio.run(Runner.run(scenario.agent, "What does it cost?", run_config=config))


def _stops(harness) -> list:
    return [(d, e) for d, e in harness.decided if d.action.value == "stop"]


def _their_tool_spans(harness):
    spans = [s for s in harness.tool_spans("search") if s.instrumentation_scope.name != OURS]
    return sorted(spans, key=lambda s: s.start_time)


OURS = "otel_loopguard_openai_agents"


def test_core_only_a_looping_agent_gets_a_stop_within_the_fourth_call(observe_loopguard):
    errors = metric_counter(observe_loopguard)
    scenario = looping()

    assert _run(scenario).final_output == "I gave up."  # observe: recorded, not enforced

    assert len(scenario.executions) == LOOP_TURNS
    tools = _their_tool_spans(observe_loopguard)
    assert len(tools) == LOOP_TURNS
    calls = calls_before_stop(observe_loopguard, tools)
    assert calls is not None and calls <= 4, calls
    assert errors("loopguard.internal_errors") == 0


@pytest.mark.parametrize("sensitive", [True, False], ids=["content-on", "content-off"])
@pytest.mark.parametrize("model", ["chat", "responses"])
def test_core_only_a_productive_agent_gets_no_stop(observe_loopguard, sensitive, model):
    errors = metric_counter(observe_loopguard)
    scenario = productive(model)

    assert _run(scenario, sensitive=sensitive).final_output == ANSWER

    assert scenario.executions == list(QUERIES)
    assert _stops(observe_loopguard) == []
    assert errors("loopguard.internal_errors") == 0


def test_core_only_two_invocations_under_one_application_span_are_two_runs(observe_loopguard):
    with observe_loopguard.app_tracer().start_as_current_span("handle request"):
        for _ in range(2):
            _run(looping())

    assert len({event.run_id for _, event in _stops(observe_loopguard)}) == 2


def _our_run(harness):
    (span,) = [
        s for s in harness.named("invoke_agent researcher") if s.instrumentation_scope.name == OURS
    ]
    return span


@pytest.mark.parametrize("invocations", [1, 2])
def test_beside_our_package_the_loop_is_interrupted_after_at_most_four_executions(
    with_our_package, invocations
):
    def start():
        scenario = looping()
        return lambda: _run(scenario), lambda: len(scenario.executions)

    assert_interrupted_in_each_invocation(with_our_package(mode="enforce"), invocations, start)


@pytest.mark.parametrize("sensitive", [True, False], ids=["content-on", "content-off"])
@pytest.mark.parametrize("model", ["chat", "responses"])
def test_beside_our_package_the_productive_run_counts_the_real_tokens(
    with_our_package, model, sensitive
):
    harness = with_our_package(mode="enforce")
    errors = metric_counter(harness)
    scenario = productive(model)

    assert _run(scenario, sensitive=sensitive).final_output == ANSWER

    run = _our_run(harness)
    assert run.attributes["loopguard.run.state"] == "completed"
    assert run.attributes["gen_ai.usage.input_tokens"] == 5 * USAGE[0]
    assert run.attributes["gen_ai.usage.output_tokens"] == 5 * USAGE[1]
    assert errors("loopguard.internal_errors") == 0


@pytest.mark.parametrize("sensitive", [True, False], ids=["content-on", "content-off"])
def test_beside_our_package_a_token_budget_stops_at_the_turn_over_it(with_our_package, sensitive):
    harness = with_our_package(mode="enforce", token_budget=120)
    scenario = productive("responses")

    with pytest.raises(LoopGuardInterrupt) as raised:
        _run(scenario, sensitive=sensitive)

    assert raised.value.decision.detectors == ("budget",)
    assert len(scenario.api.requests) == 3  # 50 tokens a turn: the third goes over 120
    assert len(scenario.executions) == 2
    assert _our_run(harness).attributes["loopguard.run.state"] == "budget_exceeded"


@pytest.mark.parametrize("model", ["chat", "responses"])
def test_core_only_tokens_are_counted_from_their_chat_spans(make_loopguard, model):
    harness = make_loopguard(mode="observe", token_budget=120)

    _run(productive(model))

    chats = [s for s in harness.spans() if s.attributes.get("gen_ai.operation.name") == "chat"]
    assert stopped_at(harness, chats, "budget") == 3
