"""Model turns of real pydantic-ai runs: token budgets, max steps, truncation, premature ends.

``FunctionModel`` answers offline and reports the usage the scenario gives it;
``productive_agent`` makes five model turns (four ``search`` calls, then the answer) and
counts the requests its model received, so a test knows whether a vetoed request was sent.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from otel_loopguard_pydantic_ai import model_turns
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.exceptions import OutputTokenLimitExceeded
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.fallback import FallbackModel
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.usage import RequestUsage
from scripted_agents import FINAL_ANSWER, productive_agent

from otel_loopguard import LoopGuardInterrupt
from otel_loopguard.guard import get_guard

QUESTION = "What does it cost?"
TURN_USAGE = (40, 10)
BUDGET = 120  # 50 tokens a turn: the third turn goes over


def _usage_on_run_span(harness: Any) -> tuple[int, int]:
    (run,) = harness.named("invoke_agent researcher")
    return run.attributes["gen_ai.usage.input_tokens"], run.attributes["gen_ai.usage.output_tokens"]


def test_token_budget_stops_the_run_before_the_next_model_call(make_loopguard):
    harness = make_loopguard(mode="enforce", token_budget=BUDGET)
    scenario = productive_agent(usage=TURN_USAGE)

    with pytest.raises(LoopGuardInterrupt) as raised:
        scenario.agent.run_sync(QUESTION)

    assert raised.value.decision.detectors == ("budget",)
    # 150 tokens after the third turn: its search never runs, no fourth request is sent
    assert len(scenario.model_calls) == 3
    assert len(scenario.executions) == 2
    assert harness.run_state("researcher") == "budget_exceeded"
    assert _usage_on_run_span(harness) == (3 * 40, 3 * 10)
    harness.assert_every_span_ended_once()


def test_run_token_totals_land_on_the_agent_span(observe_loopguard):
    scenario = productive_agent(usage=TURN_USAGE)

    result = scenario.agent.run_sync(QUESTION)

    assert result.output == FINAL_ANSWER
    usage = result.usage  # pydantic-ai's own count of the run
    assert (usage.input_tokens, usage.output_tokens) == (5 * 40, 5 * 10)
    assert _usage_on_run_span(observe_loopguard) == (usage.input_tokens, usage.output_tokens)


def test_token_budget_in_observe_mode_records_the_stop_and_lets_the_run_finish(make_loopguard):
    harness = make_loopguard(mode="observe", token_budget=BUDGET)
    scenario = productive_agent(usage=TURN_USAGE)

    result = scenario.agent.run_sync(QUESTION)

    assert result.output == FINAL_ANSWER
    assert len(scenario.model_calls) == 5
    stops = harness.decision_events("stop")
    assert stops, "observe mode still records the STOP decision"
    assert all("budget" in attributes["loopguard.detectors"] for _, attributes in stops)


def test_max_steps_sends_no_further_request(make_loopguard):
    harness = make_loopguard(mode="enforce", max_steps=3)
    scenario = productive_agent()

    with pytest.raises(LoopGuardInterrupt) as raised:
        scenario.agent.run_sync(QUESTION)

    assert raised.value.decision.detectors == ("budget",)
    assert len(scenario.model_calls) == 3  # the fourth request was vetoed before it was sent
    assert len(scenario.executions) == 3
    assert harness.run_state("researcher") == "max_steps"
    harness.assert_every_span_ended_once()


def test_a_request_after_the_run_timed_out_is_never_sent(make_loopguard):
    """The pre-flight check runs right before each model request: when the run's
    ``timeout`` passes after the last thing we observed (here the caller of ``iter``
    pausing between two steps), the next request is vetoed before it is sent."""
    harness = make_loopguard(mode="enforce", timeout=0.5)
    scenario = productive_agent()

    async def drive_with_a_pause() -> None:
        async with scenario.agent.iter(QUESTION) as run:
            node = run.next_node
            while not Agent.is_end_node(node):
                if Agent.is_model_request_node(node) and scenario.model_calls:
                    await asyncio.sleep(0.6)  # the run's time passes between two requests
                node = await run.next(node)

    with pytest.raises(LoopGuardInterrupt) as raised:
        asyncio.run(drive_with_a_pause())

    assert raised.value.decision.end_state == "timed_out"
    assert scenario.model_calls == ["request"]  # the second request was never sent
    assert len(scenario.executions) == 1
    assert harness.run_state("researcher") == "timed_out"
    harness.assert_every_span_ended_once()


async def _drive(agent: Agent[None, str], how: str) -> str | None:
    """Consume a run to its end the way a streaming caller does."""
    if how == "run_stream":
        async with agent.run_stream(QUESTION) as streamed:
            return await streamed.get_output()
    if how == "event_stream_handler":  # ``run`` streams each step to the handler

        async def handle(ctx: Any, events: Any) -> None:
            async for _event in events:
                pass

        return (await agent.run(QUESTION, event_stream_handler=handle)).output
    if how == "iter":  # each model request streamed by the caller, as a UI does
        async with agent.iter(QUESTION) as run:
            node = run.next_node
            while not Agent.is_end_node(node):
                if Agent.is_model_request_node(node):
                    async with node.stream(run.ctx) as events:
                        async for _event in events:
                            pass
                node = await run.next(node)
            return run.result.output if run.result is not None else None
    async with agent.run_stream_events(QUESTION) as events:
        async for _event in events:
            pass
    return None


@pytest.mark.parametrize("how", ["run_stream", "iter", "run_stream_events", "event_stream_handler"])
def test_max_steps_stops_a_streamed_run_before_its_next_request(make_loopguard, how):
    harness = make_loopguard(mode="enforce", max_steps=3)
    scenario = productive_agent()

    with pytest.raises(LoopGuardInterrupt):
        asyncio.run(_drive(scenario.agent, how))

    assert scenario.model_calls == ["stream"] * 3
    assert len(scenario.executions) == 3
    assert harness.run_state("researcher") == "max_steps"
    harness.assert_every_span_ended_once()


@pytest.mark.parametrize("how", ["run_stream", "run_stream_events"])
def test_a_token_budget_stops_a_streamed_run_before_the_turns_tools_run(make_loopguard, how):
    # a streamed FunctionModel estimates about 55 tokens a turn: the second one goes over
    harness = make_loopguard(mode="enforce", token_budget=60)
    scenario = productive_agent()

    with pytest.raises(LoopGuardInterrupt) as raised:
        asyncio.run(_drive(scenario.agent, how))

    assert [signal.kind for signal in raised.value.decision.reasons] == ["tokens"]
    assert scenario.model_calls == ["stream"] * 2
    assert len(scenario.executions) == 1  # the second turn's search never ran
    assert harness.run_state("researcher") == "budget_exceeded"
    input_tokens, output_tokens = _usage_on_run_span(harness)
    assert input_tokens + output_tokens > 60
    harness.assert_every_span_ended_once()


def test_a_streamed_run_counts_its_usage(observe_loopguard):
    scenario = productive_agent()

    async def drive() -> tuple[str, Any]:
        async with scenario.agent.run_stream(QUESTION) as streamed:
            output = await streamed.get_output()
        return output, streamed.usage

    output, usage = asyncio.run(drive())

    assert output == FINAL_ANSWER
    assert scenario.model_calls == ["stream"] * 5
    assert usage.input_tokens > 0 and usage.output_tokens > 0  # estimated by FunctionModel
    assert _usage_on_run_span(observe_loopguard) == (usage.input_tokens, usage.output_tokens)
    observe_loopguard.assert_every_span_ended_once()


def test_another_run_inside_a_streamed_answer_leaves_that_turn_counted(observe_loopguard):
    """The caller runs another agent while it holds a streamed answer: that agent's turns
    count (in the same run: it is nested in it), and the streamed turn still counts too."""
    scenario = productive_agent(usage=TURN_USAGE)
    helper = productive_agent(usage=(7, 3))
    helper.agent.name = "helper"

    async def drive() -> Any:
        async with scenario.agent.run_stream(QUESTION) as streamed:
            await helper.agent.run("Check the glossary first.")
            await streamed.get_output()
        return streamed.usage

    usage = asyncio.run(drive())

    assert len(helper.model_calls) == 5
    assert _usage_on_run_span(observe_loopguard) == (
        usage.input_tokens + 5 * 7,
        usage.output_tokens + 5 * 3,
    )


def test_a_stream_left_early_counts_what_was_billed_and_breaks_nothing(loopguard):
    scenario = productive_agent()

    async def read_the_first_words_then_leave() -> Any:
        async with scenario.agent.run_stream(QUESTION) as streamed:
            async for _text in streamed.stream_output():
                break
        return streamed.usage

    usage = asyncio.run(read_the_first_words_then_leave())

    assert scenario.model_calls == ["stream"] * 5
    # the answer's cut-off stream counts as pydantic-ai counts it
    assert _usage_on_run_span(loopguard) == (usage.input_tokens, usage.output_tokens)
    assert loopguard.run_state("researcher") == "completed"
    loopguard.assert_every_span_ended_once()
    assert not [r for r in loopguard.caplog.records if model_turns._WHERE in r.getMessage()]


def _truncating_model() -> FunctionModel:
    """Its answer is cut off at its output token limit (pydantic-ai's ``length``)."""

    def respond(messages: Any, info: Any) -> ModelResponse:
        return ModelResponse(
            parts=[TextPart("The team plan costs 10 EUR per seat, billed")],
            finish_reason="length",
            usage=RequestUsage(input_tokens=30, output_tokens=16),
        )

    return FunctionModel(respond)


def test_a_truncated_answer_gets_the_continuation_decision(loopguard):
    agent: Agent[None, str] = Agent(_truncating_model(), name="writer")

    result = agent.run_sync("What does the team plan cost?")

    assert result.output.endswith("billed")  # not interrupted: a replan is advice
    ((_span, replan),) = loopguard.decision_events("replan")
    assert replan["loopguard.detectors"] == ("truncation",)
    ((decision, _event),) = loopguard.decided
    assert "cut off" in decision.recommendation
    (run,) = loopguard.named("invoke_agent writer")
    assert run.attributes["gen_ai.usage.output_tokens"] == 16


def test_a_response_a_fallback_rejected_counts_as_billed(loopguard):
    """``FallbackModel`` moves on from a cut-off answer: the step's response carries the
    rejected attempt, whose tokens pydantic-ai bills to the run and so do we."""

    def answer(messages: Any, info: Any) -> ModelResponse:
        usage = RequestUsage(input_tokens=40, output_tokens=10)
        return ModelResponse(parts=[TextPart("The team plan costs 10 EUR per seat.")], usage=usage)

    model = FallbackModel(
        _truncating_model(), FunctionModel(answer), fallback_on=(OutputTokenLimitExceeded,)
    )
    agent: Agent[None, str] = Agent(model, name="writer")

    result = agent.run_sync("What does the team plan cost?")

    assert result.output == "The team plan costs 10 EUR per seat."
    assert (result.usage.input_tokens, result.usage.output_tokens) == (30 + 40, 16 + 10)
    (run,) = loopguard.named("invoke_agent writer")
    assert run.attributes["gen_ai.usage.input_tokens"] == result.usage.input_tokens
    assert run.attributes["gen_ai.usage.output_tokens"] == result.usage.output_tokens
    assert loopguard.decision_events("replan") == []  # the answer the run kept was complete


def test_complete_answers_get_no_truncation_decision(loopguard):
    scenario = productive_agent(usage=TURN_USAGE)

    scenario.agent.run_sync(QUESTION)

    assert _usage_on_run_span(loopguard) == (5 * 40, 5 * 10)  # all five turns were read
    assert loopguard.decision_events("replan") == []
    assert loopguard.decided == []


def test_a_turn_reported_below_counts_once(make_loopguard):
    """A model that reports its own turn (what a model-call instrumentation below pydantic-ai
    does, our OpenAI package under ``OpenAIChatModel`` say) marks the open model turn: our
    wrapper does not report it again, so neither ``max_steps`` nor the tokens count it twice."""
    harness = make_loopguard(mode="enforce", max_steps=3)
    scenario = productive_agent(usage=TURN_USAGE)
    plain = scenario.model.function

    def respond_and_report(messages: Any, info: Any) -> ModelResponse:
        response = plain(messages, info)
        get_guard().observe_llm_response(input_tokens=40, output_tokens=10)
        return response

    scenario.model.function = respond_and_report

    with pytest.raises(LoopGuardInterrupt):
        scenario.agent.run_sync(QUESTION)

    assert len(scenario.model_calls) == 3  # counted twice, max_steps would stop after two
    assert _usage_on_run_span(harness) == (3 * 40, 3 * 10)


def test_an_empty_answer_after_a_failing_tool_is_a_premature_end(loopguard):
    model_calls: list[str] = []

    def respond(messages: Any, info: Any) -> ModelResponse:
        model_calls.append("request")
        if len(model_calls) == 1:
            return ModelResponse(parts=[ToolCallPart("fetch", {"url": "/admin"})])
        if len(model_calls) == 2:  # ends its turn with nothing at all
            return ModelResponse(parts=[])
        return ModelResponse(parts=[TextPart("I cannot read the admin page.")])

    agent: Agent[None, str] = Agent(FunctionModel(respond), name="researcher")

    @agent.tool_plain
    def fetch(url: str) -> str:
        """Fetch a page."""
        raise ModelRetry(f"403 permission denied: {url}")

    result = agent.run_sync("Read the admin page")

    assert result.output == "I cannot read the admin page."
    ((_span, replan),) = loopguard.decision_events("replan")
    assert replan["loopguard.detectors"] == ("premature_end",)


def test_an_error_in_our_bookkeeping_never_breaks_the_run(loopguard, monkeypatch):
    reader = InMemoryMetricReader()
    counter = (
        MeterProvider(metric_readers=[reader])
        .get_meter("test")
        .create_counter("loopguard.internal_errors")
    )
    monkeypatch.setattr(loopguard.guard.telemetry, "internal_errors", counter)

    def broken(response: Any) -> Any:
        raise RuntimeError("unexpected response shape")

    monkeypatch.setattr(model_turns, "_read_response", broken)
    scenario = productive_agent(usage=TURN_USAGE)

    result = scenario.agent.run_sync(QUESTION)

    assert result.output == FINAL_ANSWER
    assert len(scenario.executions) == 4
    assert _internal_errors(reader, model_turns._WHERE) == 5  # one per turn, all caught
    assert any(model_turns._WHERE in r.getMessage() for r in loopguard.caplog.records)


def _internal_errors(reader: InMemoryMetricReader, where: str) -> int:
    data = reader.get_metrics_data()
    return sum(
        point.value
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == "loopguard.internal_errors"
        for point in metric.data.data_points
        if point.attributes.get("where") == where
    )
