"""Agents driven offline by the SDK's own ``agents.testing.ScriptedModel``.

Each builder returns the agent plus a list that the tool body appends to, so tests count
the real executions of the tool function rather than spans.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agents import Agent, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call

LOOP_STEPS = 8  # the SDK stops at max_turns=10 by default
FINAL_ANSWER = "Pricing starts at 10 EUR per seat."


@dataclass
class Scenario:
    agent: Agent
    model: ScriptedModel
    executions: list[str] = field(default_factory=list)


def search_tool(executions: list[str], answer: Callable[[str], str] | None = None) -> Any:
    """A ``search`` function tool that records each query it runs in ``executions`` and
    answers ``answer(query)`` (``"no results"`` by default)."""

    @function_tool
    def search(query: str) -> str:
        """Search the knowledge base."""
        executions.append(query)
        return answer(query) if answer is not None else "no results"

    return search


def _scenario(
    calls: list[tuple[str, dict[str, Any]]],
    final: str,
    tool: Any,
    executions: list[str],
    instructions: str = "Find the price.",
) -> Scenario:
    """An agent ``researcher`` whose scripted model makes the ``calls`` (one a turn, ids
    ``call_{i}``), then answers ``final``."""
    script = [
        [function_call(name, arguments, call_id=f"call_{i}")]
        for i, (name, arguments) in enumerate(calls)
    ]
    script.append([assistant_message(final)])
    model = ScriptedModel(script)
    agent = Agent(name="researcher", instructions=instructions, tools=[tool], model=model)
    return Scenario(agent, model, executions)


def looping_agent(steps: int = LOOP_STEPS) -> Scenario:
    """The model asks for ``search(query="pricing")`` ``steps`` times; it always gets nothing."""
    executions: list[str] = []
    calls = [("search", {"query": "pricing"})] * steps
    return _scenario(calls, "I could not find anything.", search_tool(executions), executions)


def productive_agent() -> Scenario:
    """Distinct searches with changing results, then a final answer."""
    executions: list[str] = []
    catalogue = {
        "pricing page": "pricing: see /pricing",
        "/pricing": "plans: basic, team",
        "team plan price": "team: 10 EUR per seat",
        "currency": "all prices in EUR",
    }
    calls = [("search", {"query": query}) for query in catalogue]
    tool = search_tool(executions, catalogue.__getitem__)
    return _scenario(calls, FINAL_ANSWER, tool, executions)


def ping_pong_agents(rounds: int = 6) -> tuple[Agent, Agent]:
    """Two agents that hand the conversation back and forth ``rounds`` times, then answer."""
    billing_script = []
    triage_script = []
    for i in range(rounds):
        if i % 2 == 0:
            triage_script.append([function_call("transfer_to_billing", {}, call_id=f"h{i}")])
        else:
            billing_script.append([function_call("transfer_to_triage", {}, call_id=f"h{i}")])
    (triage_script if rounds % 2 == 0 else billing_script).append([assistant_message("done")])
    triage = Agent(name="triage", model=ScriptedModel(triage_script))
    billing = Agent(name="billing", model=ScriptedModel(billing_script))
    triage.handoffs = [billing]
    billing.handoffs = [triage]
    return triage, billing


def failing_agent(steps: int = LOOP_STEPS) -> Scenario:
    """The model keeps calling ``fetch``, whose body raises; the SDK hands the model a text."""
    executions: list[str] = []

    @function_tool
    def fetch(url: str) -> str:
        """Fetch a page."""
        executions.append(url)
        raise PermissionError(f"403 permission denied: {url}")

    calls = [("fetch", {"url": "/admin"})] * steps
    return _scenario(calls, "I have no access.", fetch, executions, "Read the page.")
