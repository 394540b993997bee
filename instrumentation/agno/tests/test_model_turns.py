"""Each model call of an Agno agent counted once: tokens, budgets, max steps, host safety."""

from __future__ import annotations

import pytest
from scripted_models import (
    COMPLETION_TOKENS,
    PROMPT_TOKENS,
    QUESTION,
    CountingSearch,
    productive_agent,
)
from test_agent import RUNS, answer

from otel_loopguard.engine.decisions import LoopGuardInterrupt


def steps(harness, agent) -> int:
    return harness.guard.monitor.run_snapshot(agent.session_id).counters.steps


@pytest.mark.parametrize("how", RUNS)
def test_every_model_call_counts_once(loopguard, how):
    search = CountingSearch()
    agent = productive_agent(search)

    outcome = RUNS[how](agent)

    assert answer(outcome) == "found after 3 searches"
    assert agent.model.calls == 4
    assert loopguard.run_usage("researcher") == (4 * PROMPT_TOKENS, 4 * COMPLETION_TOKENS)
    assert steps(loopguard, agent) == 4


@pytest.mark.parametrize("how", RUNS)
def test_a_turn_a_layer_below_reported_counts_once(loopguard, how):
    """A provider SDK's instrumentation below the model (our OpenAI package, OpenInference's
    model spans) makes a ``chat`` span that the span processor reports: ours stands back."""
    search = CountingSearch()
    agent = productive_agent(search, searches=2)
    agent.model.sdk_tracer = loopguard.app_tracer()

    outcome = RUNS[how](agent)

    assert answer(outcome) == "found after 2 searches"
    assert len(loopguard.named("chat scripted-gpt")) == 3
    assert loopguard.run_usage("researcher") == (3 * PROMPT_TOKENS, 3 * COMPLETION_TOKENS)
    assert steps(loopguard, agent) == 3


@pytest.mark.parametrize("how", ["run", "run-stream", "arun-stream"])
def test_token_budget_stops_the_turn_that_goes_over_before_its_tool_runs(make_loopguard, how):
    loopguard = make_loopguard(mode="enforce", token_budget=120)
    search = CountingSearch(lambda query, n: f"result {n}")
    agent = productive_agent(search, searches=5)

    with pytest.raises(LoopGuardInterrupt) as stopped:
        RUNS[how](agent)

    assert stopped.value.decision.detectors == ("budget",)
    assert agent.model.calls == 3  # 150 tokens after the third
    assert len(search.executions) == 2  # the third turn's search never ran
    assert loopguard.run_state("researcher") == "budget_exceeded"


@pytest.mark.parametrize("how", ["run", "arun", "run-stream"])
def test_max_steps_vetoes_the_model_call_before_it_is_made(make_loopguard, how):
    loopguard = make_loopguard(mode="enforce", max_steps=2)
    search = CountingSearch(lambda query, n: f"result {n}")
    agent = productive_agent(search, searches=5)

    with pytest.raises(LoopGuardInterrupt):
        RUNS[how](agent)

    assert agent.model.calls == 2  # the third call was never made nor paid for
    assert loopguard.run_state("researcher") == "max_steps"


def test_an_error_in_our_bookkeeping_never_breaks_the_agent(loopguard, monkeypatch):
    from otel_loopguard_agno import model_turns

    def unreadable(value: object) -> int:
        raise RuntimeError("a usage shape we do not know")

    monkeypatch.setattr(model_turns, "_tokens", unreadable)
    search = CountingSearch(lambda query, n: f"result {n}")
    agent = productive_agent(search, searches=2)

    output = agent.run(QUESTION)

    assert output.content == "found after 2 searches"
    assert len(search.executions) == 2
    logged = [r.getMessage() for r in loopguard.caplog.records]
    assert any("agno.model_turn" in message for message in logged)
    assert loopguard.run_state("researcher") == "completed"
    assert len(loopguard.tool_spans("search")) == 2  # the gate goes on working
