"""Two instrumentations in one process: our OpenAI SDK package below Agno's ``OpenAIChat``.

The OpenAI SDK package reports each model call it sees; this package reports each model
call of Agno's tool loop unless a package below already did (the ``LoopGuard.model_turn``
open around the call, or around each pull of a streamed one, is marked). A turn must count
once, or token budgets and ``max_steps`` trip at half their size.

The OpenAI API is the OpenAI suite's scripted one (``instrumentation/openai/tests``), served
over HTTP on the loopback, and called by Agno's real ``OpenAIChat`` and the real OpenAI SDK.
``scripts/run_tests.py`` installs that package here (``install-also`` in pyproject.toml).
"""

from __future__ import annotations

from typing import Any

import pytest
from agno.agent import Agent
from agno.models.openai import OpenAIChat
from otel_loopguard_testing import openai_package_fixture
from otel_loopguard_testing.openai_below import (
    TEAM_PLAN_ANSWER,
    check_each_turn_counted_once,
    check_the_budget_stops_before_the_tool,
    served_team_plan_api_fixture,
)

with_openai_package = openai_package_fixture()
api = served_team_plan_api_fixture()


def run_agent(url: str, executions: list[str], stream: bool) -> Any:
    def search(query: str) -> str:
        """Search the price list."""
        executions.append(query)
        return "team: 10 EUR per seat"

    model = OpenAIChat(id="gpt-test", base_url=url, api_key="test")
    agent = Agent(name="researcher", model=model, tools=[search], telemetry=False)
    if stream:
        return "".join(
            event.content
            for event in agent.run("What does the team plan cost?", stream=True)
            if isinstance(getattr(event, "content", None), str)
        )
    return agent.run("What does the team plan cost?").content


@pytest.mark.parametrize("stream", [False, True], ids=["run", "run-stream"])
def test_a_turn_the_openai_package_reported_counts_once(with_openai_package, api, stream) -> None:
    answer = check_each_turn_counted_once(
        with_openai_package, api, lambda url, executions: run_agent(url, executions, stream)
    )
    assert answer == TEAM_PLAN_ANSWER


def test_the_budget_still_stops_the_run_before_the_tool_runs(with_openai_package, api) -> None:
    check_the_budget_stops_before_the_tool(
        with_openai_package, api, lambda url, executions: run_agent(url, executions, False)
    )
