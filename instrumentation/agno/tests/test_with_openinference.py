"""Agno's own tracing next to ours: OpenInference's Agno instrumentation (what
``agno.tracing.setup_tracing`` installs) on the same tracer provider.

Its agent span carries the run's ``session.id``, its model spans carry the usage, and the
span processor reads them: they must land in the run our wrapper keyed by that same
session (not in a run of their own), each model call counted once and each tool execution
once (its tool spans nest in our gate spans). Model calls go through Agno's real
``OpenAIChat`` and the real OpenAI SDK to the OpenAI suite's scripted API on the loopback.
"""

from __future__ import annotations

from typing import Any

import pytest
from agno.agent import Agent
from agno.models.openai import OpenAIChat
from openinference.instrumentation.agno import AgnoInstrumentor as OpenInferenceAgno
from otel_loopguard_testing import assert_run_totals, instrumentor_fixture
from otel_loopguard_testing.scripted_openai import ScriptedAPI, Turn

from otel_loopguard.engine.decisions import LoopGuardInterrupt

ANSWER = "The team plan costs 10 EUR per seat."
SEARCH = Turn(tool_calls=[("search", {"query": "team plan"})], input_tokens=40, output_tokens=10)


with_openinference = instrumentor_fixture("with_openinference", OpenInferenceAgno)


def serve(turns: list[Turn]) -> tuple[ScriptedAPI, str, Any]:
    scripted = ScriptedAPI(turns)
    url, stop = scripted.serve()
    return scripted, url, stop


def new_agent(url: str, executions: list[str]) -> Agent:
    def search(query: str) -> str:
        """Search the price list."""
        executions.append(query)
        return "no results"

    model = OpenAIChat(id="gpt-test", base_url=url, api_key="test")
    return Agent(name="researcher", model=model, tools=[search], telemetry=False)


def openinference_spans(harness: Any, kind: str) -> list[Any]:
    return [s for s in harness.spans() if s.attributes.get("openinference.span.kind") == kind]


def test_its_model_spans_count_once_in_the_run_of_the_session(with_openinference) -> None:
    # 110 tokens in two turns: under a 150 budget; counted twice (220) the run would stop
    harness = with_openinference(mode="enforce", token_budget=150, max_steps=2)
    scripted, url, stop = serve([SEARCH, Turn(text=ANSWER, input_tokens=50, output_tokens=10)])
    executions: list[str] = []
    try:
        agent = new_agent(url, executions)
        output = agent.run("What does the team plan cost?")
    finally:
        stop()

    assert output.content == ANSWER
    assert executions == ["team plan"]
    assert len(scripted.requests) == 2
    assert len(openinference_spans(harness, "LLM")) == 2  # both instrumentations at work
    (agent_span,) = openinference_spans(harness, "AGENT")
    assert agent_span.attributes["session.id"] == agent.session_id
    (run,) = harness.named("invoke_agent researcher")
    assert run.attributes["loopguard.run.id"] == agent.session_id
    assert_run_totals(harness, [(40, 10), (50, 10)], "completed")
    assert not harness.decision_events("stop")
    harness.assert_every_span_ended_once()


def test_a_looping_agent_is_stopped_after_three_executions(with_openinference) -> None:
    harness = with_openinference(mode="enforce")
    scripted, url, stop = serve([SEARCH] * 8)
    executions: list[str] = []
    try:
        with pytest.raises(LoopGuardInterrupt) as stopped:
            new_agent(url, executions).run("What does the team plan cost?")
    finally:
        stop()

    assert "repetition" in stopped.value.decision.detectors
    # its tool spans are not counted as more calls: counted twice, the second would stop it
    assert len(executions) == 3
    assert len(scripted.requests) == 3
    assert len(harness.executed_tool_spans("search")) == 3
    # (not asserted: OpenInference ends its tool span on success or an Exception only, so
    # the span of the call our interrupt ends, a BaseException passing its wrapper, stays
    # open and is never exported)
    assert harness.run_state("researcher") == "stopped"
