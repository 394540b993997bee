"""Our core alone beside Logfire's OpenAI instrumentation: the hand-written chat loop's
``agent_run`` and gated tools, their ``Chat Completion`` spans (GenAI conventions, the
messages recorded: Logfire has no switch to leave them out). A looping run is stopped
within the fourth call, a productive one is left alone with its real steps and tokens, two
invocations under one application span are two runs."""

from __future__ import annotations

from otel_loopguard_testing import CHAT_TOOL_SCHEMAS, metric_counter, run_chat_tool_loop
from otel_loopguard_testing.compat_checks import (
    assert_interrupted_in_each_invocation,
    executions_at_first_stop,
)
from otel_loopguard_testing.scripted_openai import ScriptedAPI, Turn, usage_turns

LOOP_TURNS = 6
#: the productive run: three searches, then its answer
USAGE = [(11, 3), (17, 4), (25, 6), (30, 8)]
TOTALS = (sum(u[0] for u in USAGE), sum(u[1] for u in USAGE))


def run_loop(harness, api: ScriptedAPI, tools: dict, **options):
    """The hand-written loop over the real OpenAI client on ``api``."""
    client = api.client()

    def complete(messages):
        return client.chat.completions.create(
            model="gpt-test", messages=messages, tools=CHAT_TOOL_SCHEMAS
        )

    return run_chat_tool_loop(complete, harness.app_tracer(), tools, **options)


def looping_api(turns: int = LOOP_TURNS) -> ScriptedAPI:
    """The same search on every turn (the tool finds nothing), then the model gives up."""
    looping = [Turn(tool_calls=[("search", {"query": "pricing"})])] * turns
    return ScriptedAPI([*looping, Turn(text="gave up")])


def looping_start(harness):
    """``start()`` for ``otel_loopguard_testing.compat_checks``: a fresh looping loop."""

    def start():
        api = looping_api()
        executions: list[str] = []

        def search(query: str) -> str:
            executions.append(query)
            return "no results"

        return (lambda: run_loop(harness, api, {"search": search}), lambda: len(executions))

    return start


def their_spans(harness) -> list:
    return [s for s in harness.spans() if s.instrumentation_scope.name == "logfire.openai"]


def run_usage(harness) -> tuple[int, int]:
    (agent,) = harness.spans("invoke_agent")
    attributes = agent.attributes
    return attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]


def test_a_looping_run_is_stopped_within_the_fourth_call(observe_loopguard) -> None:
    count = metric_counter(observe_loopguard)
    run, executed = looping_start(observe_loopguard)()
    at_stop = executions_at_first_stop(observe_loopguard, executed)
    outcome = run()
    assert outcome.answer == "gave up"  # observe mode: it went on
    assert executed() == LOOP_TURNS
    assert at_stop() <= 4
    assert len(their_spans(observe_loopguard)) == LOOP_TURNS + 1
    assert count("loopguard.internal_errors") == 0


def test_a_productive_run_is_untouched(observe_loopguard) -> None:
    count = metric_counter(observe_loopguard)
    api = ScriptedAPI(usage_turns(USAGE))
    outcome = run_loop(observe_loopguard, api, {"search": lambda query: f"result {query}"})
    assert outcome.answer == "answer"
    spans = their_spans(observe_loopguard)
    assert len(spans) == len(USAGE)
    assert "gen_ai.input.messages" in spans[-1].attributes  # their content, recorded
    (agent,) = observe_loopguard.spans("invoke_agent")
    assert agent.attributes["loopguard.run.state"] == "completed"
    assert run_usage(observe_loopguard) == TOTALS
    assert not observe_loopguard.decision_events("stop")
    assert count("loopguard.internal_errors") == 0


def test_two_invocations_under_one_application_span_are_two_runs(loopguard) -> None:
    assert_interrupted_in_each_invocation(loopguard, 2, looping_start(loopguard))
    runs = loopguard.spans("invoke_agent")
    assert [s.attributes["loopguard.run.state"] for s in runs] == ["stopped", "stopped"]
    assert len({s.attributes["loopguard.run.id"] for s in runs}) == 2
