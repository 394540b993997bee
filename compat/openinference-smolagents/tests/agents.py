"""The two ToolCallingAgents of this suite: stuck on one search, or searching pages in turn."""

from __future__ import annotations

from scripted_models import CountingSearch, ScriptedToolCallingModel
from smolagents import ToolCallingAgent
from smolagents.monitoring import LogLevel

TASK = "find the pricing page"
TURN_TOKENS = (20, 5)  # what ScriptedToolCallingModel reports for every turn


def looping_agent(search: CountingSearch, max_steps: int = 8) -> ToolCallingAgent:
    model = ScriptedToolCallingModel(lambda step: ("search", {"query": "pricing"}))
    return ToolCallingAgent(
        tools=[search.tool], model=model, max_steps=max_steps, verbosity_level=LogLevel.OFF
    )


def productive_agent(search: CountingSearch) -> ToolCallingAgent:
    def script(step: int):
        if step <= 3:
            return ("search", {"query": f"pricing page {step}"})
        return ("final_answer", {"answer": f"found after {len(search.executions)} searches"})

    return ToolCallingAgent(
        tools=[search.tool],
        model=ScriptedToolCallingModel(script),
        max_steps=8,
        verbosity_level=LogLevel.OFF,
    )


def empty_search() -> CountingSearch:
    return CountingSearch(lambda query, n: "no results")


def paged_search() -> CountingSearch:
    return CountingSearch(lambda query, n: f"page {n}: results for {query}")
