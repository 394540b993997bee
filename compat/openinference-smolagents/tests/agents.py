"""The two ToolCallingAgents of this suite: stuck on one search, or searching pages in turn.

The agents themselves are our smolagents suite's (``instrumentation/smolagents/tests``, on
``sys.path`` from the conftest), so both suites drive the same real loops."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scripted_models import CountingSearch
from test_tool_calling_agent import looping_agent, productive_agent

__all__ = [
    "TASK",
    "TURN_TOKENS",
    "empty_search",
    "looping_agent",
    "looping_run",
    "paged_search",
    "productive_agent",
]

TASK = "find the pricing page"
TURN_TOKENS = (20, 5)  # what ScriptedToolCallingModel reports for every turn


def empty_search() -> CountingSearch:
    return CountingSearch(lambda query, n: "no results")


def looping_run() -> tuple[Callable[[], Any], Callable[[], int]]:
    """A fresh looping agent on an empty search: ``(run, executed)`` (compat_checks)."""
    search = empty_search()
    return lambda: looping_agent(search).run(TASK), lambda: len(search.executions)


def paged_search() -> CountingSearch:
    return CountingSearch(lambda query, n: f"page {n}: results for {query}")
