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
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_ext.models.openai import OpenAIChatCompletionClient
from otel_loopguard_testing import openai_package_fixture
from otel_loopguard_testing.openai_below import (
    TEAM_PLAN_ANSWER,
    check_each_turn_counted_once,
    check_the_budget_stops_before_the_tool,
    served_team_plan_api_fixture,
)

MODEL_INFO = {
    "vision": False,
    "function_calling": True,
    "json_output": False,
    "family": "unknown",
    "structured_output": False,
}


with_openai_package = openai_package_fixture()
api = served_team_plan_api_fixture()


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
    result = check_each_turn_counted_once(with_openai_package, api, run_agent)
    assert result.messages[-1].content == TEAM_PLAN_ANSWER


def test_the_budget_still_stops_the_run_before_the_next_call(with_openai_package, api) -> None:
    check_the_budget_stops_before_the_tool(with_openai_package, api, run_agent)
