"""pydantic-ai's own spans alone with our core, observe mode (issue 17, point 2).

With ``include_content=False`` pydantic-ai still writes the parts of each message, without
their content: a ``tool_call`` part with no ``arguments``, a ``text`` part with no
``content``. Read as "not recorded", a productive run gets no repeated-steps warning.
"""

from __future__ import annotations

import pytest
from otel_loopguard_testing.decided import calls_before_stop, stopped_at
from otel_loopguard_testing.metrics import metric_counter
from pydantic_ai.models.instrumented import InstrumentationSettings
from scripted_agents import FINAL_ANSWER, looping_agent, productive_agent

QUESTION = "What does it cost?"
LOOP_CALLS = 8


def _theirs(harness, content: bool) -> InstrumentationSettings:
    return InstrumentationSettings(tracer_provider=harness.provider, include_content=content)


def _actions(harness) -> list[str]:
    return [decision.action.value for decision, _event in harness.decided]


def test_a_looping_agent_gets_a_stop_within_the_fourth_call(observe_loopguard):
    errors = metric_counter(observe_loopguard)
    scenario = looping_agent(LOOP_CALLS, instrument=_theirs(observe_loopguard, True))

    assert scenario.agent.run_sync(QUESTION).output == "I could not find anything."

    assert len(scenario.executions) == LOOP_CALLS  # observe mode: recorded, not enforced
    tools = sorted(observe_loopguard.tool_spans("search"), key=lambda s: s.start_time)
    assert len(tools) == LOOP_CALLS and {s.instrumentation_scope.name for s in tools} == {
        "pydantic-ai"
    }
    calls = calls_before_stop(observe_loopguard, tools)
    assert calls is not None and calls <= 4, calls
    assert errors("loopguard.internal_errors") == 0


@pytest.mark.parametrize("content", [True, False], ids=["content-on", "content-off"])
def test_a_productive_agent_gets_no_warning_and_no_stop(observe_loopguard, content):
    errors = metric_counter(observe_loopguard)
    scenario = productive_agent(instrument=_theirs(observe_loopguard, content))

    assert scenario.agent.run_sync(QUESTION).output == FINAL_ANSWER

    assert len(scenario.executions) == 4
    assert _actions(observe_loopguard) == []  # not even a repeated-steps warning
    assert errors("loopguard.internal_errors") == 0


def test_without_content_a_loop_is_not_claimed(observe_loopguard):
    scenario = looping_agent(LOOP_CALLS, instrument=_theirs(observe_loopguard, False))

    scenario.agent.run_sync(QUESTION)

    assert "stop" not in _actions(observe_loopguard)


def test_two_invocations_under_one_application_span_are_two_runs(observe_loopguard):
    tracer = observe_loopguard.app_tracer()

    with tracer.start_as_current_span("handle request"):
        for _ in range(2):
            looping_agent(LOOP_CALLS, instrument=_theirs(observe_loopguard, True)).agent.run_sync(
                QUESTION
            )

    stops = {e.run_id for d, e in observe_loopguard.decided if d.action.value == "stop"}
    assert len(stops) == 2


@pytest.mark.parametrize("content", [True, False], ids=["content-on", "content-off"])
def test_tokens_are_counted_from_their_chat_spans(make_loopguard, content):
    harness = make_loopguard(mode="observe", token_budget=120)
    scenario = productive_agent(instrument=_theirs(harness, content), usage=(40, 10))

    scenario.agent.run_sync(QUESTION)

    assert stopped_at(harness, harness.spans("chat "), "budget") == 3
