"""Our core alone beside Langfuse's ``@observe`` tracing, observe mode.

Langfuse writes what an observation is in ``langfuse.observation.type`` (``agent``,
``tool``, ``generation``), its input and output in ``langfuse.observation.input`` /
``.output`` (a function's arguments as ``{"args": [...], "kwargs": {...}}``), a
generation's usage as one JSON object in ``langfuse.observation.usage_details``: the dialect
table reads them, so a looping ``@observe(as_type="tool")`` agent is stopped.
"""

from __future__ import annotations

import pytest
from agents import INPUT_TOKENS, OUTPUT_TOKENS, looping_script, make_agent, productive_script
from langfuse import observe
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.compat_checks import assert_loop_observed, assert_stopped_then_completed
from otel_loopguard_testing.scripted_models import ToolCounter

QUESTION = "How much is the Pro plan?"


def _their_tools(harness, tool: str) -> list:
    return [
        s
        for s in harness.spans()
        if s.name == tool and s.attributes.get("langfuse.observation.type") == "tool"
    ]


def test_a_looping_agent_is_stopped_within_the_fourth_call(observe_loopguard) -> None:
    def start():
        counter = ToolCounter()
        agent = make_agent(looping_script(8), counter)
        return lambda: agent(QUESTION), lambda: counter["search"]

    result = assert_loop_observed(observe_loopguard, start, executions=8)
    assert result == "I could not find the price."  # observe mode: the agent went on
    assert len(_their_tools(observe_loopguard, "search")) == 8
    (run,) = observe_loopguard.named("loopguard.run")
    assert run.attributes["loopguard.run.tool_calls"] == 8


def test_a_productive_agent_gets_no_stop(observe_loopguard, content: str) -> None:
    count = metric_counter(observe_loopguard)
    counter = ToolCounter()
    answer = make_agent(productive_script(), counter)(QUESTION)

    assert answer.startswith("Answer: Pro plan costs 20 EUR")
    tools = _their_tools(observe_loopguard, "lookup")
    assert len(tools) == 3
    output = tools[0].attributes.get("langfuse.observation.output")
    expected = {"content-on": "Pro plan costs 20 EUR per month", "masked": "[REDACTED]"}
    assert output == expected.get(content)  # capture off: no output at all
    assert [d for d, _ in observe_loopguard.decided if d.action.value == "stop"] == []
    assert not observe_loopguard.decision_events("stop")
    (run,) = observe_loopguard.named("loopguard.run")
    assert run.attributes["loopguard.run.state"] == "completed"
    assert run.attributes["loopguard.run.tool_calls"] == 3
    assert count("loopguard.internal_errors") == 0


@pytest.mark.parametrize("content", ["io-capture-off", "masked"], indirect=True)
def test_without_content_a_loop_is_not_claimed(observe_loopguard, content: str) -> None:
    """Unrecorded or masked calls never look identical (a false STOP is worse than a missed
    one): the looping run is counted, not stopped."""
    make_agent(looping_script(8), ToolCounter())(QUESTION)

    assert len(_their_tools(observe_loopguard, "search")) == 8
    assert [d for d, _ in observe_loopguard.decided if d.action.value == "stop"] == []
    (run,) = observe_loopguard.named("loopguard.run")
    assert run.attributes["loopguard.run.tool_calls"] == 8


def test_two_invocations_under_one_application_span_are_two_runs(observe_loopguard) -> None:
    count = metric_counter(observe_loopguard)
    with observe_loopguard.app_tracer().start_as_current_span("handle request"):
        make_agent(looping_script(8), ToolCounter())(QUESTION)
        make_agent(productive_script(), ToolCounter())(QUESTION)

    second = assert_stopped_then_completed(observe_loopguard, count)
    first = observe_loopguard.named("loopguard.run")[0]
    assert first.attributes["loopguard.run.tool_calls"] == 8
    assert second.attributes["loopguard.run.tool_calls"] == 3


def test_usage_is_counted_from_their_generations(make_loopguard) -> None:
    """A token budget of 2.5 turns (observe mode): the generations' ``usage_details`` are
    counted, so the budget's STOP comes with the 3rd model call, and not before."""
    per_turn = INPUT_TOKENS + OUTPUT_TOKENS
    harness = make_loopguard(mode="observe", token_budget=per_turn * 5 // 2)
    make_agent(productive_script(), ToolCounter())(QUESTION)

    budget = [(d, e) for d, e in harness.decided if "budget" in d.detectors]
    assert budget and budget[0][0].action.value == "stop"
    generations = sorted(
        (
            s
            for s in harness.spans()
            if s.attributes.get("langfuse.observation.type") == "generation"
        ),
        key=lambda s: s.end_time,
    )
    assert len(generations) == 4
    assert budget[0][1].span_id == format(generations[2].context.span_id, "016x")


def test_two_invocations_under_one_observed_function_are_two_runs(observe_loopguard) -> None:
    """The application's own function decorated with a plain ``@observe()`` (a ``span``
    observation, the usual request handler) around two agents: its type says it is no
    agent as soon as it started, so each agent inside is a run of its own."""
    count = metric_counter(observe_loopguard)

    @observe()
    def handle_request() -> None:
        make_agent(looping_script(8), ToolCounter())(QUESTION)
        make_agent(productive_script(), ToolCounter())(QUESTION)

    handle_request()

    second = assert_stopped_then_completed(observe_loopguard, count)
    first = observe_loopguard.named("loopguard.run")[0]
    assert first.attributes["loopguard.run.tool_calls"] == 8
    assert second.attributes["loopguard.run.tool_calls"] == 3
