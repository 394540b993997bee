"""Two instrumentations in one process: our OpenAI SDK package below the Agents SDK.

The Agents SDK's own OpenAI model calls the OpenAI SDK, which ``otel-loopguard-openai``
instruments too: that package reports each model call it sees. This package reports each
turn as well, unless a package below already did (which marks the ``LoopGuard.model_turn``
open around the call). A turn must count once, or token budgets and ``max_steps`` trip at
half their size.

The OpenAI API is the OpenAI suite's scripted one (``instrumentation/openai/tests``): the
SDK's real client over a mock transport, the one stand-in, because the network is out of
reach. ``scripts/run_tests.py`` installs that package here (``install-also`` in
pyproject.toml).
"""

from __future__ import annotations

import asyncio

from agents import Agent, OpenAIResponsesModel, Runner, function_tool
from otel_loopguard_testing import openai_package_fixture
from otel_loopguard_testing.openai_below import (
    TEAM_PLAN_ANSWER,
    assert_each_turn_counted_once,
    team_plan_api,
)
from otel_loopguard_testing.scripted_openai import ScriptedAPI

with_openai_package = openai_package_fixture()


def _agent(api: ScriptedAPI, executions: list[str]) -> Agent:
    @function_tool
    def search(query: str) -> str:
        """Search the price list."""
        executions.append(query)
        return "team: 10 EUR per seat"

    model = OpenAIResponsesModel(model="gpt-test", openai_client=api.async_client())
    return Agent(name="researcher", instructions="Find the price.", tools=[search], model=model)


def test_a_turn_the_openai_package_reported_counts_once(with_openai_package) -> None:
    # 110 tokens in two turns: under a 150 budget; counted twice (220) the run would stop
    harness = with_openai_package(mode="enforce", token_budget=150, max_steps=2)
    api = team_plan_api()
    executions: list[str] = []

    result = asyncio.run(Runner.run(_agent(api, executions), "What does the team plan cost?"))

    assert result.final_output == TEAM_PLAN_ANSWER
    assert executions == ["team plan"]
    assert_each_turn_counted_once(harness, api)


def test_the_budget_still_stops_a_run_that_goes_over_it(with_openai_package) -> None:
    """The same two turns under a budget of 100: the second turn goes over it, once."""
    harness = with_openai_package(mode="observe", token_budget=100)
    api = team_plan_api()

    result = asyncio.run(Runner.run(_agent(api, []), "What does the team plan cost?"))

    assert result.final_output == TEAM_PLAN_ANSWER  # observe mode: recorded, not enforced
    stops = harness.decision_events("stop")
    assert stops and all("budget" in attrs["loopguard.detectors"] for _, attrs in stops)
    (run,) = harness.named("invoke_agent researcher")
    assert run.attributes["gen_ai.usage.input_tokens"] == 90
