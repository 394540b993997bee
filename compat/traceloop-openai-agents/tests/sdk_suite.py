"""What the two OpenAI Agents SDK compat suites (this one, OpenLLMetry's instrumentation,
and ``compat/openai-agents-v2``, the official one, which imports it from here) share: their
fixtures, running a scripted scenario (``scripted``), and the checks that read the same
whichever instrumentation made the spans.

Both instrumentations are trace processors of the SDK's own tracing: that tracing stays on,
with theirs as its only processor (the SDK's default one would upload traces to OpenAI)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from agents import RunConfig, Runner, set_trace_processors
from otel_loopguard_testing import harness_fixtures, instrumentor_fixture
from otel_loopguard_testing.decided import calls_before_stop, stops
from otel_loopguard_testing.metrics import metric_counter
from scripted import ANSWER, LOOP_TURNS, QUERIES, USAGE, Scenario, looping, productive

from otel_loopguard import LoopGuardInterrupt

#: the instrumentation scope of our OpenAI Agents package's spans
OURS = "otel_loopguard_openai_agents"


def suite_fixtures(theirs: Any) -> tuple[Any, ...]:
    """``instrumented, make_loopguard, loopguard, observe_loopguard, with_our_package``:
    theirs (the instrumentor class) once per session, a fresh guard per test;
    ``with_our_package`` adds our OpenAI Agents package."""

    def our_package() -> Any:
        from otel_loopguard_openai_agents import OpenAIAgentsInstrumentor

        return OpenAIAgentsInstrumentor()

    set_trace_processors([])  # theirs adds itself when it instruments
    return (
        *harness_fixtures(theirs),
        instrumentor_fixture("with_our_package", our_package),
    )


def run(scenario: Scenario, *, sensitive: bool = True) -> Any:
    """One run of ``scenario``'s agent (``sensitive``: the SDK's traces carry the data)."""
    config = RunConfig(trace_include_sensitive_data=sensitive)
    return asyncio.run(Runner.run(scenario.agent, "What does it cost?", run_config=config))


def our_run(harness: Any) -> Any:
    """Our package's one ``invoke_agent researcher`` span."""
    (span,) = [
        s for s in harness.named("invoke_agent researcher") if s.instrumentation_scope.name == OURS
    ]
    return span


def assert_loop_observed(harness: Any, their_tool_spans: Callable[[Any], list[Any]]) -> None:
    """Core only, observe mode: the looping agent ran to its scripted end, one tool span
    of theirs per execution, and the first STOP came within 4 of them."""
    errors = metric_counter(harness)
    scenario = looping()

    assert run(scenario).final_output == "I gave up."  # observe: recorded, not enforced

    assert len(scenario.executions) == LOOP_TURNS
    tools = their_tool_spans(harness)
    assert len(tools) == LOOP_TURNS
    calls = calls_before_stop(harness, tools)
    assert calls is not None and calls <= 4, calls
    assert errors("loopguard.internal_errors") == 0


def assert_productive_not_stopped(harness: Any, model: str, sensitive: bool) -> None:
    """Core only: the productive agent on ``model`` gets its answer and no STOP."""
    errors = metric_counter(harness)
    scenario = productive(model)

    assert run(scenario, sensitive=sensitive).final_output == ANSWER

    assert scenario.executions == list(QUERIES)
    assert stops(harness) == []
    assert errors("loopguard.internal_errors") == 0


def assert_two_runs_under_one_span(harness: Any) -> None:
    """Core only: two looping invocations under one application span, each a run of its
    own with its own STOP."""
    with harness.app_tracer().start_as_current_span("handle request"):
        for _ in range(2):
            run(looping())

    assert len({event.run_id for _, event in stops(harness)}) == 2


def assert_productive_counted_once(harness: Any, model: str, sensitive: bool) -> None:
    """Beside our package: the productive run ``completed`` with its five turns' tokens,
    each counted once, whoever reported it."""
    errors = metric_counter(harness)
    scenario = productive(model)

    assert run(scenario, sensitive=sensitive).final_output == ANSWER

    span = our_run(harness)
    assert span.attributes["loopguard.run.state"] == "completed"
    assert span.attributes["gen_ai.usage.input_tokens"] == 5 * USAGE[0]
    assert span.attributes["gen_ai.usage.output_tokens"] == 5 * USAGE[1]
    assert errors("loopguard.internal_errors") == 0


def assert_budget_stops_the_third_turn(harness: Any, model: str, sensitive: bool) -> None:
    """Beside our package, a 120-token budget: 50 tokens a turn, so the third goes over
    (uncounted, never; counted twice, the second): interrupted before its search ran."""
    scenario = productive(model)

    with pytest.raises(LoopGuardInterrupt) as raised:
        run(scenario, sensitive=sensitive)

    assert raised.value.decision.detectors == ("budget",)
    assert len(scenario.api.requests) == 3
    assert len(scenario.executions) == 2  # the third turn's search never ran
    span = our_run(harness)
    assert span.attributes["loopguard.run.state"] == "budget_exceeded"
    assert span.attributes["gen_ai.usage.input_tokens"] == 3 * USAGE[0]
