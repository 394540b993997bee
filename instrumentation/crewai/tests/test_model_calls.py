"""The model side of CrewAI steps: pre-flight before each LLM call, usage on the run."""

from __future__ import annotations

import pytest
from scripted_crew import CountingSearch, make_crew

from otel_loopguard.engine.decisions import LoopGuardInterrupt


def _distinct_searches(step: int):
    return ("tool", "search", {"query": f"pricing page {step}"})


def test_max_steps_stops_before_the_next_model_call(make_loopguard):
    lg = make_loopguard(mode="enforce", max_steps=3)
    search = CountingSearch(lambda query, n: f"result {n}")
    crew = make_crew(search, _distinct_searches, max_iter=10)

    with pytest.raises(LoopGuardInterrupt) as stopped:
        crew.kickoff()

    assert stopped.value.decision.detectors == ("budget",)
    assert crew.agents[0].llm.calls == 3  # the fourth model call never happened
    assert len(search.executions) == 3
    (run,) = lg.spans("invoke_agent")
    assert run.attributes["loopguard.run.state"] == "max_steps"
    assert run.attributes["gen_ai.usage.input_tokens"] == 3 * 30  # the LLM's reported usage
    assert run.attributes["gen_ai.usage.output_tokens"] == 3 * 6


def test_token_budget_stops_before_the_next_model_call(make_loopguard):
    lg = make_loopguard(mode="enforce", token_budget=72)  # each call reports 30 + 6 tokens
    search = CountingSearch(lambda query, n: f"result {n}")
    crew = make_crew(search, _distinct_searches, max_iter=10)

    with pytest.raises(LoopGuardInterrupt) as stopped:
        crew.kickoff()

    assert stopped.value.decision.detectors == ("budget",)
    assert crew.agents[0].llm.calls == 2  # 72 used, no headroom: no third call
    (run,) = lg.spans("invoke_agent")
    assert run.attributes["loopguard.run.state"] == "budget_exceeded"
