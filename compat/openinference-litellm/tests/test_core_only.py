"""Our core alone beside OpenInference's LiteLLM instrumentation: the hand-written loop's
``agent_run`` and gated tools, their ``completion`` LLM spans. A looping run is stopped
within the fourth call, a productive one is left alone with their content shown or hidden,
two invocations under one application span are two runs."""

from __future__ import annotations

from agent_loop import run_agent
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.compat_checks import (
    assert_interrupted_in_each_invocation,
    executions_at_first_stop,
    openinference_spans,
)
from otel_loopguard_testing.scripted_openai import Turn, usage_turns

LOOP_TURNS = 6
#: the productive run: three searches, then its answer
USAGE = [(11, 3), (17, 4), (25, 6), (30, 8)]
TOTALS = (sum(u[0] for u in USAGE), sum(u[1] for u in USAGE))


def looping_turns(turns: int = LOOP_TURNS + 2) -> list[Turn]:
    """The same search on every turn (the tool finds nothing), then the model gives up."""
    return [Turn(tool_calls=[("search", {"query": "pricing"})])] * turns + [Turn(text="gave up")]


def run_usage(agent) -> tuple[int, int]:
    """``(input, output)`` tokens on our ``invoke_agent`` span of the loop."""
    attributes = agent.attributes
    return attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]


def looping_start(harness, serve):
    """``start()`` for ``otel_loopguard_testing.compat_checks``: a fresh looping loop."""

    def start():
        api = serve(looping_turns())
        executions: list[str] = []

        def search(query: str) -> str:
            executions.append(query)
            return "no results"

        return (
            lambda: run_agent(api.base, harness.app_tracer(), {"search": search}),
            lambda: len(executions),
        )

    return start


def test_a_looping_run_is_stopped_within_the_fourth_call(observe_loopguard, serve) -> None:
    count = metric_counter(observe_loopguard)
    api = serve(looping_turns(LOOP_TURNS))
    executions: list[str] = []

    def search(query: str) -> str:
        executions.append(query)
        return "no results"

    at_stop = executions_at_first_stop(observe_loopguard, lambda: len(executions))
    outcome = run_agent(api.base, observe_loopguard.app_tracer(), {"search": search})
    assert outcome.answer == "gave up"  # observe mode: it went on
    assert len(executions) == LOOP_TURNS
    assert at_stop() <= 4
    assert len(openinference_spans(observe_loopguard, "LLM")) == LOOP_TURNS + 1
    assert count("loopguard.internal_errors") == 0


def test_a_productive_run_is_untouched(observe_loopguard, serve, hidden: bool) -> None:
    count = metric_counter(observe_loopguard)
    api = serve(usage_turns(USAGE))
    outcome = run_agent(
        api.base, observe_loopguard.app_tracer(), {"search": lambda query: f"result {query}"}
    )
    assert outcome.answer == "answer"
    spans = openinference_spans(observe_loopguard, "LLM")
    assert len(spans) == len(USAGE)
    assert (spans[-1].attributes.get("output.value") == "__REDACTED__") is hidden
    (agent,) = observe_loopguard.spans("invoke_agent")
    assert agent.attributes["loopguard.run.state"] == "completed"
    assert run_usage(agent) == TOTALS
    assert not observe_loopguard.decision_events("stop")
    assert count("loopguard.internal_errors") == 0


def test_two_invocations_under_one_application_span_are_two_runs(loopguard, serve) -> None:
    assert_interrupted_in_each_invocation(loopguard, 2, looping_start(loopguard, serve))
    runs = loopguard.spans("invoke_agent")
    assert [s.attributes["loopguard.run.state"] for s in runs] == ["stopped", "stopped"]
    assert len({s.attributes["loopguard.run.id"] for s in runs}) == 2
