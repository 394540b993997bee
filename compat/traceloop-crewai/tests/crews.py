"""The suite's crews: our crewai suite's one-researcher crew on CrewAI's own OpenAI provider,
its model the scripted OpenAI API served on loopback."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from crewai import LLM
from otel_loopguard_testing.scripted_openai import ScriptedAPI, Turn
from scripted_crew import CountingSearch, make_crew

ANSWER = "The Pro plan costs 20 EUR per month."
PAGES = {
    "pricing": "Pro plan: 20 EUR per month",
    "seats": "Pro plan: 5 seats",
    "refunds": "30 days",
}


def looping_turns(searches: int) -> list[Turn]:
    """The same search ``searches`` times (CrewAI's own guard raises at the 5th identical
    call with the same result), then giving up."""
    same = [Turn(tool_calls=[("search", {"query": "pricing"})]) for _ in range(searches)]
    return [*same, Turn(text="I could not find it.")]


def productive_turns() -> list[Turn]:
    """Three distinct searches, then the answer: 4 turns of 10 + 5 tokens."""
    return [Turn(tool_calls=[("search", {"query": page})]) for page in PAGES] + [Turn(text=ANSWER)]


def looping_search() -> CountingSearch:
    return CountingSearch(lambda query, n: "no results")


def productive_search() -> CountingSearch:
    return CountingSearch(lambda query, n: PAGES.get(query, "no results"))


def kickoff(turns: list[Turn], search: CountingSearch) -> Any:
    """One crew run to its end against ``turns`` served on loopback."""
    api = ScriptedAPI(turns, model="gpt-4o-mini")
    base_url, stop = api.serve()
    try:
        llm = LLM(model="gpt-4o-mini", base_url=base_url, api_key="test-key", max_retries=0)
        return make_crew(search, None, llm=llm, max_iter=10).kickoff()
    finally:
        stop()


def starter(searches: int) -> Callable[[], tuple[Callable[[], Any], Callable[[], int]]]:
    """``start()`` for the compat checks: a fresh looping crew run and its execution count."""

    def start() -> tuple[Callable[[], Any], Callable[[], int]]:
        search = looping_search()
        return lambda: kickoff(looping_turns(searches), search), lambda: len(search.executions)

    return start


#: the scope of our crewai package's spans
OUR_SCOPE = "otel_loopguard_crewai"


def our_run(harness: Any) -> Any:
    """Our package's ``invoke_agent`` span of the crew's run (exactly one)."""
    (span,) = [
        s for s in harness.spans("invoke_agent") if s.instrumentation_scope.name == OUR_SCOPE
    ]
    return span
