"""Our core alone beside OpenInference's Anthropic instrumentation (and the SDK's own span):
the hand-written loop's ``agent_run`` and gated tools, their ``messages.create`` LLM spans.
A looping run is stopped within the fourth call, a productive one is left alone with their
content shown or hidden, two invocations under one application span are two runs."""

from __future__ import annotations

from agents import ToolBox, looping, productive, run_agent
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.compat_checks import (
    assert_interrupted_in_each_invocation,
    executions_at_first_stop,
    openinference_spans,
)
from scripted_api import ScriptedMessagesAPI

CALLS = 4  # the productive agent: three lookups, then its answer
USAGE = (100 * CALLS, 20 * CALLS)  # the scripted API's usage per answer
LOOP_TURNS = 6


def looping_start(harness, give_up_after: int | None = None):
    """``start()`` for ``otel_loopguard_testing.compat_checks``: a fresh looping agent."""

    def start():
        api = ScriptedMessagesAPI(looping(give_up_after))
        tools = ToolBox()
        return (
            lambda: run_agent(api.client(), tools, tracer=harness.app_tracer()),
            lambda: tools["search"],
        )

    return start


def test_a_looping_run_is_stopped_within_the_fourth_call(observe_loopguard) -> None:
    count = metric_counter(observe_loopguard)
    run, executed = looping_start(observe_loopguard, LOOP_TURNS)()
    at_stop = executions_at_first_stop(observe_loopguard, executed)
    result = run()
    assert result.answer == "I could not find the price."  # observe mode: it went on
    assert executed() == LOOP_TURNS
    assert at_stop() <= 4
    assert len(openinference_spans(observe_loopguard, "LLM")) == LOOP_TURNS + 1
    assert observe_loopguard.run_state("claude_agent") == "stopped"
    assert count("loopguard.internal_errors") == 0


def test_a_productive_run_is_untouched(observe_loopguard, hidden: bool) -> None:
    count = metric_counter(observe_loopguard)
    api = ScriptedMessagesAPI(productive())
    result = run_agent(api.client(), ToolBox(), tracer=observe_loopguard.app_tracer())
    assert result.answer.startswith("Answer:")
    spans = openinference_spans(observe_loopguard, "LLM")
    assert len(spans) == CALLS
    assert (spans[-1].attributes.get("output.value") == "__REDACTED__") is hidden
    assert observe_loopguard.run_state("claude_agent") == "completed"
    assert observe_loopguard.run_usage("claude_agent") == USAGE  # their span and the SDK's
    assert not observe_loopguard.decision_events("stop")
    assert count("loopguard.internal_errors") == 0


def test_two_invocations_under_one_application_span_are_two_runs(loopguard) -> None:
    assert_interrupted_in_each_invocation(loopguard, 2, looping_start(loopguard))
    runs = loopguard.named("invoke_agent claude_agent")
    assert [s.attributes["loopguard.run.state"] for s in runs] == ["stopped", "stopped"]
    assert len({s.attributes["loopguard.run.id"] for s in runs}) == 2
