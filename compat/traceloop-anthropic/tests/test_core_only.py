"""Our core alone beside OpenLLMetry's Anthropic instrumentation and the Anthropic SDK's own
span: each request has two sibling model spans with one ``gen_ai.response.id``, and they
are one step: the run's steps and tokens are the real ones, and budgets trip at the real
usage, not at half of it (issue 29, point 8)."""

from __future__ import annotations

from agents import ToolBox, looping, productive, run_agent
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.compat_checks import (
    assert_interrupted,
    assert_interrupted_in_each_invocation,
)
from scripted_api import ScriptedMessagesAPI

CALLS = 4  # the productive agent: three lookups, then its answer
USAGE = (100 * CALLS, 20 * CALLS)  # the scripted API's usage per answer


def _productive(harness):
    api = ScriptedMessagesAPI(productive())
    tools = ToolBox()
    result = run_agent(api.client(), tools, tracer=harness.app_tracer())
    return result, api


def _answer_ids(harness, scope: str) -> list[str]:
    return [
        s.attributes["gen_ai.response.id"]
        for s in harness.spans()
        if s.instrumentation_scope.name == scope
    ]


def _looping_start(harness):
    def start():
        api = ScriptedMessagesAPI(looping())
        tools = ToolBox()
        return (
            lambda: run_agent(api.client(), tools, tracer=harness.app_tracer()),
            lambda: tools["search"],
        )

    return start


def test_two_spans_of_one_answer_are_one_step(loopguard) -> None:
    count = metric_counter(loopguard)
    result, api = _productive(loopguard)
    assert result.answer.startswith("Answer:")
    assert len(api.requests) == CALLS
    # both spans of every request, one answer id each: theirs and the SDK's
    theirs = _answer_ids(loopguard, "opentelemetry.instrumentation.anthropic")
    assert theirs == _answer_ids(loopguard, "com.anthropic.sdk.python")
    assert len(set(theirs)) == CALLS
    assert loopguard.run_state("claude_agent") == "completed"
    assert loopguard.run_usage("claude_agent") == USAGE
    assert count("loopguard.internal_errors") == 0


def test_a_step_limit_and_a_token_budget_trip_at_the_real_usage(make_loopguard) -> None:
    """``max_steps`` of the run's real model calls and a token budget just above its real
    usage: counted twice, the run was stopped halfway."""
    harness = make_loopguard(max_steps=CALLS, token_budget=sum(USAGE) + 20)
    result, _api = _productive(harness)
    assert result.answer.startswith("Answer:")
    assert harness.run_state("claude_agent") == "completed"
    assert harness.run_usage("claude_agent") == USAGE
    assert harness.decision_events("stop") == []


def test_a_looping_run_is_interrupted_within_four_calls(loopguard) -> None:
    assert_interrupted(loopguard, _looping_start(loopguard), agent="claude_agent")


def test_two_invocations_under_one_application_span_are_two_runs(loopguard) -> None:
    assert_interrupted_in_each_invocation(loopguard, 2, _looping_start(loopguard))
    runs = loopguard.named("invoke_agent claude_agent")
    assert len({s.attributes["loopguard.run.id"] for s in runs}) == 2
