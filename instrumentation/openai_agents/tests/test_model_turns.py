"""Model turns of real OpenAI Agents SDK runs: token budgets, max steps, truncation.

Scripted models report usage per turn (no network). ``productive_agent`` makes five model
turns: four ``search`` calls, then the answer.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import agents.run_internal.run_loop
import pytest
from agents import Agent, Model, ModelResponse, RunHooks, Runner, Usage, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call
from otel_loopguard_openai_agents import model_turns
from otel_loopguard_testing import wrappers_removed
from scripted_agents import FINAL_ANSWER, productive_agent

from otel_loopguard import LoopGuardInterrupt
from otel_loopguard.guard import get_guard

TURN_USAGE = Usage(requests=1, input_tokens=40, output_tokens=10, total_tokens=50)
BUDGET = 120  # 50 tokens a turn: the third turn goes over


def costly_agent() -> Any:
    scenario = productive_agent()
    scenario.model.set_default_usage(TURN_USAGE)
    return scenario


@pytest.fixture
def without_model_turns() -> Iterator[None]:
    """The instrumentation as it was before model turns were observed (tools, runs only)."""
    with wrappers_removed(agents.run_internal.run_loop, "get_single_step_result_from_response"):
        yield


def test_token_budget_stops_the_run_before_the_next_tool_runs(make_loopguard):
    harness = make_loopguard(mode="enforce", token_budget=BUDGET)
    scenario = costly_agent()

    with pytest.raises(LoopGuardInterrupt) as raised:
        asyncio.run(Runner.run(scenario.agent, "What does it cost?"))

    assert raised.value.decision.detectors == ("budget",)
    # 150 tokens after the third turn: its search never runs, no fourth model call
    assert len(scenario.executions) == 2
    assert scenario.model.remaining_steps == 2
    assert harness.run_state("researcher") == "budget_exceeded"
    (run,) = harness.named("invoke_agent researcher")
    assert run.attributes["gen_ai.usage.input_tokens"] == 120
    assert run.attributes["gen_ai.usage.output_tokens"] == 30
    harness.assert_every_span_ended_once()


def test_without_model_turns_the_same_run_ignores_the_budget(make_loopguard, without_model_turns):
    harness = make_loopguard(mode="enforce", token_budget=BUDGET)
    scenario = costly_agent()

    result = asyncio.run(Runner.run(scenario.agent, "What does it cost?"))

    assert result.final_output == FINAL_ANSWER
    assert len(scenario.executions) == 4
    assert harness.run_state("researcher") == "completed"


def test_token_budget_in_observe_mode_records_the_stop_and_lets_the_run_finish(make_loopguard):
    harness = make_loopguard(mode="observe", token_budget=BUDGET)
    scenario = costly_agent()

    result = asyncio.run(Runner.run(scenario.agent, "What does it cost?"))

    assert result.final_output == FINAL_ANSWER
    assert len(scenario.executions) == 4
    stops = harness.decision_events("stop")
    assert stops, "observe mode still records the STOP decision"
    assert all("budget" in attributes["loopguard.detectors"] for _, attributes in stops)
    (run,) = harness.named("invoke_agent researcher")
    assert run.attributes["gen_ai.usage.input_tokens"] == 200  # five turns of 40


def test_max_steps_counts_model_turns(make_loopguard):
    harness = make_loopguard(mode="enforce", max_steps=3)
    scenario = productive_agent()

    with pytest.raises(LoopGuardInterrupt) as raised:
        asyncio.run(Runner.run(scenario.agent, "What does it cost?"))

    assert raised.value.decision.detectors == ("budget",)
    assert len(scenario.executions) == 3  # the fourth turn is one too many: its call never runs
    # vetoed before it was sent: the fourth model call is never made (nor paid for)
    assert scenario.model.remaining_steps == 2
    assert harness.run_state("researcher") == "max_steps"


def test_a_model_call_after_the_run_timed_out_is_never_sent(make_loopguard):
    """The pre-flight check runs right before each model call: when the run's ``timeout``
    passes after the last thing we observed (here in a slow ``on_llm_start`` hook of the
    application), the call is vetoed before it is sent."""
    harness = make_loopguard(mode="enforce", timeout=0.2)
    scenario = productive_agent()

    class SlowHooks(RunHooks):  # type: ignore[misc]
        async def on_llm_start(self, *args: Any, **kwargs: Any) -> None:
            time.sleep(0.3)

    with pytest.raises(LoopGuardInterrupt) as raised:
        asyncio.run(Runner.run(scenario.agent, "What does it cost?", hooks=SlowHooks()))

    assert raised.value.decision.end_state == "timed_out"
    assert scenario.model.remaining_steps == 5  # not one model call was made
    assert scenario.executions == []
    assert harness.run_state("researcher") == "timed_out"
    harness.assert_every_span_ended_once()


def test_streamed_run_is_stopped_by_the_token_budget(make_loopguard):
    harness = make_loopguard(mode="enforce", token_budget=BUDGET)
    scenario = costly_agent()

    async def consume() -> None:
        streamed = Runner.run_streamed(scenario.agent, "What does it cost?")
        async for _event in streamed.stream_events():
            pass

    with pytest.raises(LoopGuardInterrupt) as raised:
        asyncio.run(consume())

    assert raised.value.decision.detectors == ("budget",)
    assert len(scenario.executions) == 2
    assert harness.run_state("researcher") == "budget_exceeded"
    harness.assert_every_span_ended_once()


class TruncatingModel(Model):
    """A user's own ``Model``: it returns the answer cut off at its output token limit."""

    def __init__(self, report_usage_itself: bool = False) -> None:
        self.report_usage_itself = report_usage_itself

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        message = assistant_message("The team plan costs 10 EUR per seat, billed")
        message.status = "incomplete"
        usage = Usage(requests=1, input_tokens=30, output_tokens=16, total_tokens=46)
        if self.report_usage_itself:  # what a model-call instrumentation below us does
            get_guard().observe_llm_response(
                finish_reason="length", input_tokens=30, output_tokens=16
            )
        return ModelResponse(output=[message], usage=usage, response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


def test_a_truncated_answer_gets_the_continuation_decision(loopguard):
    agent = Agent(name="writer", model=TruncatingModel())

    result = asyncio.run(Runner.run(agent, "What does the team plan cost?"))

    assert result.final_output.endswith("billed")  # not interrupted: a replan is advice
    ((_span, replan),) = loopguard.decision_events("replan")
    assert replan["loopguard.detectors"] == ("truncation",)
    (run,) = loopguard.named("invoke_agent writer")
    assert run.attributes["gen_ai.usage.output_tokens"] == 16


def test_a_complete_answer_gets_no_truncation_decision(loopguard):
    scenario = productive_agent()

    asyncio.run(Runner.run(scenario.agent, "What does it cost?"))

    assert loopguard.decision_events("replan") == []


def test_an_empty_end_after_a_failing_tool_is_a_premature_end(loopguard):
    @function_tool
    def fetch(url: str) -> str:
        """Fetch a page."""
        raise PermissionError(f"403 permission denied: {url}")

    # the model calls fetch, then ends its turn with nothing at all
    model = ScriptedModel([[function_call("fetch", {"url": "/admin"}, call_id="c1")], []])
    agent = Agent(name="researcher", tools=[fetch], model=model)

    result = asyncio.run(Runner.run(agent, "Read the admin page"))

    assert result.final_output == ""
    ((_span, replan),) = loopguard.decision_events("replan")
    assert replan["loopguard.detectors"] == ("premature_end",)


def test_a_turn_reported_below_is_not_counted_twice(loopguard):
    agent = Agent(name="writer", model=TruncatingModel(report_usage_itself=True))

    asyncio.run(Runner.run(agent, "What does the team plan cost?"))

    (run,) = loopguard.named("invoke_agent writer")
    assert run.attributes["gen_ai.usage.input_tokens"] == 30
    assert run.attributes["gen_ai.usage.output_tokens"] == 16


def test_an_error_in_our_bookkeeping_never_breaks_the_run(loopguard, monkeypatch, caplog):
    def broken(response: Any) -> Any:
        raise RuntimeError("unexpected response shape")

    monkeypatch.setattr(model_turns, "_read_turn", broken)
    scenario = productive_agent()

    result = asyncio.run(Runner.run(scenario.agent, "What does it cost?"))

    assert result.final_output == FINAL_ANSWER
    assert len(scenario.executions) == 4
    assert any("openai_agents.model_turn" in r.getMessage() for r in caplog.records)
