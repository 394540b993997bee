"""Each model call of an ADK agent counted once: tokens, budgets, max steps, host safety."""

from __future__ import annotations

import pytest
from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.models.llm_response import LlmResponse
from otel_loopguard_testing import unreadable_by
from scripted_models import (
    CANDIDATE_TOKENS,
    PROMPT_TOKENS,
    CountingSearch,
    ScriptedModel,
    final_text,
    new_runner,
    productive_agent,
    run,
)

from otel_loopguard.engine.decisions import LoopGuardInterrupt


def test_every_model_call_counts_once(loopguard):
    search = CountingSearch()
    agent = productive_agent(search)

    events = run(new_runner(agent))

    assert final_text(events) == "found after 3 searches"
    assert agent.model.calls == 4
    assert loopguard.run_usage("researcher") == (4 * PROMPT_TOKENS, 4 * CANDIDATE_TOKENS)
    turns = loopguard.guard.monitor.run_snapshot("session-1").counters.steps
    assert turns == 4


def test_thinking_tokens_count_as_output(loopguard):
    search = CountingSearch()
    agent = productive_agent(search, searches=1)
    agent.model.thoughts_tokens = 5

    run(new_runner(agent))

    assert loopguard.run_usage("researcher") == (2 * PROMPT_TOKENS, 2 * (CANDIDATE_TOKENS + 5))


def test_a_streamed_answer_counts_once(loopguard):
    search = CountingSearch()
    agent = productive_agent(search, searches=1)

    events = run(new_runner(agent), run_config=RunConfig(streaming_mode=StreamingMode.SSE))

    assert any(event.partial for event in events)  # really streamed, chunk by chunk
    assert agent.model.calls == 2
    assert loopguard.run_usage("researcher") == (2 * PROMPT_TOKENS, 2 * CANDIDATE_TOKENS)


@pytest.mark.parametrize("streaming", [StreamingMode.NONE, StreamingMode.SSE])
def test_a_turn_a_layer_below_reported_counts_once(loopguard, streaming):
    """A provider SDK's instrumentation below the model (google-genai's, LiteLLM's) makes
    a ``chat`` span that the span processor reports: our report stands back. ADK drives a
    streamed answer in a context it copied at the first chunk, where that span ends."""
    search = CountingSearch()
    agent = productive_agent(search, searches=2)
    agent.model.sdk_tracer = loopguard.app_tracer()

    events = run(new_runner(agent), run_config=RunConfig(streaming_mode=streaming))

    assert final_text(events) == "found after 2 searches"
    assert len(loopguard.named("chat scripted-gemini")) == 3
    assert loopguard.run_usage("researcher") == (3 * PROMPT_TOKENS, 3 * CANDIDATE_TOKENS)
    assert loopguard.guard.monitor.run_snapshot("session-1").counters.steps == 3


def test_token_budget_stops_the_turn_that_goes_over_before_its_tool_runs(make_loopguard):
    loopguard = make_loopguard(mode="enforce", token_budget=120)
    search = CountingSearch(lambda query, n: f"result {n}")
    agent = productive_agent(search, searches=5)

    with pytest.raises(LoopGuardInterrupt) as stopped:
        run(new_runner(agent))

    assert stopped.value.decision.detectors == ("budget",)
    assert agent.model.calls == 3  # 150 tokens after the third
    assert len(search.executions) == 2  # the third turn's search never ran
    assert loopguard.run_state("researcher") == "budget_exceeded"


def test_max_steps_vetoes_the_model_call_before_it_is_made(make_loopguard):
    loopguard = make_loopguard(mode="enforce", max_steps=2)
    search = CountingSearch(lambda query, n: f"result {n}")
    agent = productive_agent(search, searches=5)

    with pytest.raises(LoopGuardInterrupt):
        run(new_runner(agent))

    assert agent.model.calls == 2  # the third call was never made nor paid for
    assert loopguard.run_state("researcher") == "max_steps"


class _Unreadable(
    unreadable_by("otel_loopguard_google_adk", "usage_metadata", "a response shape we do not know"),
    LlmResponse,
):
    """An ``LlmResponse`` whose usage this package cannot read (ADK and the program can):
    the stand-in for a response shape we do not know yet."""


class _OddModel(ScriptedModel):
    async def generate_content_async(self, llm_request, stream=False):
        async for response in super().generate_content_async(llm_request, stream):
            yield _Unreadable(**dict(response))


def test_an_error_in_our_bookkeeping_never_breaks_the_agent(loopguard):
    search = CountingSearch(lambda query, n: f"result {n}")

    def script(n: int):
        return [("search", {"query": f"page {n}"})] if n <= 2 else "found it"

    agent = LlmAgent(name="researcher", model=_OddModel(script=script), tools=[search.tool])

    events = run(new_runner(agent))

    assert final_text(events) == "found it"
    assert len(search.executions) == 2
    logged = [r.getMessage() for r in loopguard.caplog.records]
    assert any("google_adk.model_turn" in message for message in logged)
    assert loopguard.run_state("researcher") == "completed"
    assert len(loopguard.tool_spans("search")) == 2  # the gate goes on working
