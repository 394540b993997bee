"""Two instrumentations in one process: our OpenAI SDK package below autogen's
``OpenAIChatCompletionClient``.

The OpenAI SDK package reports each model call it sees; this package reports each
AssistantAgent turn unless a package below already did (the ``LoopGuard.model_turn`` open
around ``_call_llm``'s steps is marked). A turn must count once, or token budgets and
``max_steps`` trip at half their size.

The OpenAI API is the OpenAI suite's scripted one (``instrumentation/openai/tests``), served
over HTTP on the loopback, and called by autogen-ext's real client and the real OpenAI SDK.
``scripts/run_tests.py`` installs that package here (``install-also`` in pyproject.toml).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_ext.models.openai import OpenAIChatCompletionClient
from otel_loopguard_testing import openai_package_fixture
from otel_loopguard_testing.scripted_openai import ScriptedAPI, Turn

from otel_loopguard.engine.decisions import LoopGuardInterrupt

ANSWER = "The team plan costs 10 EUR per seat."
MODEL_INFO = {
    "vision": False,
    "function_calling": True,
    "json_output": False,
    "family": "unknown",
    "structured_output": False,
}


with_openai_package = openai_package_fixture()


@pytest.fixture
def api() -> Iterator[tuple[ScriptedAPI, str]]:
    scripted = ScriptedAPI(
        [
            Turn(
                tool_calls=[("search", {"query": "team plan"})], input_tokens=40, output_tokens=10
            ),
            Turn(text=ANSWER, input_tokens=50, output_tokens=10),
        ]
    )
    url, stop = scripted.serve()
    yield scripted, url
    stop()


def run_agent(url: str, executions: list[str]) -> Any:
    async def search(query: str) -> str:
        """Search the price list."""
        executions.append(query)
        return "team: 10 EUR per seat"

    client = OpenAIChatCompletionClient(
        model="gpt-test", base_url=url, api_key="test", model_info=MODEL_INFO
    )
    agent = AssistantAgent("researcher", model_client=client, tools=[search], max_tool_iterations=3)
    return asyncio.run(agent.run(task="What does the team plan cost?"))


def test_a_turn_the_openai_package_reported_counts_once(with_openai_package, api) -> None:
    # 110 tokens in two turns: under a 150 budget; counted twice (220) the run would stop
    harness = with_openai_package(mode="enforce", token_budget=150, max_steps=2)
    scripted, url = api
    executions: list[str] = []

    result = run_agent(url, executions)

    assert result.messages[-1].content == ANSWER
    assert executions == ["team plan"]
    assert len(scripted.requests) == 2
    chats = [s for s in harness.spans() if s.attributes.get("gen_ai.operation.name") == "chat"]
    assert len(chats) == 2  # both packages were at work
    (run,) = harness.named("invoke_agent researcher")
    assert run.attributes["gen_ai.usage.input_tokens"] == 90
    assert run.attributes["gen_ai.usage.output_tokens"] == 20
    assert run.attributes["loopguard.run.state"] == "completed"
    assert not harness.decision_events("stop")
    harness.assert_every_span_ended_once()


def test_the_budget_still_stops_the_run_before_the_next_call(with_openai_package, api) -> None:
    """A budget of 40: the first turn (50 tokens) goes over it; its tool never runs."""
    harness = with_openai_package(mode="enforce", token_budget=40)
    scripted, url = api
    executions: list[str] = []

    with pytest.raises(LoopGuardInterrupt) as stopped:
        run_agent(url, executions)

    assert stopped.value.decision.detectors == ("budget",)
    assert executions == []
    assert len(scripted.requests) == 1
    assert harness.run_state("researcher") == "budget_exceeded"
