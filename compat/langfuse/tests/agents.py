"""A hand-written agent traced by Langfuse's ``@observe`` decorators alone: the agent an
``agent`` observation, each model call a ``generation`` (with its usage), each tool a
``tool`` observation. The model is a script (no provider: nothing to reach offline); the
tools count their real executions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langfuse import get_client, observe
from otel_loopguard_testing.scripted_models import ToolCounter

CATALOG = {
    "pricing": "Pro plan costs 20 EUR per month",
    "limits": "Pro plan allows 5 seats",
    "refunds": "refunds within 30 days",
}
INPUT_TOKENS = 40
OUTPUT_TOKENS = 10

#: what the model asks for at step i: a tool call (name, arguments) or None (it answers)
Script = Callable[[int, list[str]], "tuple[str, dict[str, Any]] | None"]


def looping_script(give_up_after: int = 8) -> Script:
    """The same search again and again, ignoring its empty result."""

    def step(i: int, results: list[str]) -> tuple[str, dict[str, Any]] | None:
        return None if i >= give_up_after else ("search", {"query": "pro plan price"})

    return step


def productive_script() -> Script:
    """Three distinct lookups with changing results, then an answer."""
    topics = ("pricing", "limits", "refunds")

    def step(i: int, results: list[str]) -> tuple[str, dict[str, Any]] | None:
        return ("lookup", {"topic": topics[i]}) if i < len(topics) else None

    return step


def make_agent(script: Script, counter: ToolCounter) -> Callable[[str], str]:
    """The agent: ``agent(question)`` runs the loop to its answer."""

    @observe(as_type="tool")
    def search(query: str) -> str:
        counter.hit("search")
        return "no results"

    @observe(as_type="tool")
    def lookup(topic: str) -> str:
        counter.hit("lookup")
        return CATALOG.get(topic, "unknown topic")

    tools = {"search": search, "lookup": lookup}

    @observe(as_type="generation")
    def model(step: int, results: list[str]) -> Any:
        get_client().update_current_generation(
            model="scripted-gpt",
            usage_details={"input": INPUT_TOKENS, "output": OUTPUT_TOKENS},
        )
        return script(step, results)

    @observe(as_type="agent")
    def support_agent(question: str) -> str:
        results: list[str] = []
        for step in range(60):
            call = model(step, results)
            if call is None:
                break
            name, arguments = call
            results.append(tools[name](**arguments))
        if results and all(result == "no results" for result in results):
            return "I could not find the price."
        return "Answer: " + "; ".join(results)

    return support_agent
