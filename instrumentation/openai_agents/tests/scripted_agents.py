"""Agents driven offline by the SDK's own ``agents.testing.ScriptedModel``.

Each builder returns the agent plus a list that the tool body appends to, so tests count
the real executions of the tool function rather than spans.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agents import Agent, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call

LOOP_STEPS = 8  # the SDK stops at max_turns=10 by default
FINAL_ANSWER = "Pricing starts at 10 EUR per seat."


@dataclass
class Scenario:
    agent: Agent
    model: ScriptedModel
    executions: list[str] = field(default_factory=list)


def looping_agent(steps: int = LOOP_STEPS) -> Scenario:
    """The model asks for ``search(query="pricing")`` ``steps`` times; it always gets nothing."""
    executions: list[str] = []

    @function_tool
    def search(query: str) -> str:
        """Search the knowledge base."""
        executions.append(query)
        return "no results"

    script = [
        [function_call("search", {"query": "pricing"}, call_id=f"call_{i}")] for i in range(steps)
    ]
    script.append([assistant_message("I could not find anything.")])
    model = ScriptedModel(script)
    agent = Agent(name="researcher", instructions="Find the price.", tools=[search], model=model)
    return Scenario(agent, model, executions)


def productive_agent() -> Scenario:
    """Distinct searches with changing results, then a final answer."""
    executions: list[str] = []
    catalogue = {
        "pricing page": "pricing: see /pricing",
        "/pricing": "plans: basic, team",
        "team plan price": "team: 10 EUR per seat",
        "currency": "all prices in EUR",
    }

    @function_tool
    def search(query: str) -> str:
        """Search the knowledge base."""
        executions.append(query)
        return catalogue[query]

    script = [
        [function_call("search", {"query": query}, call_id=f"call_{i}")]
        for i, query in enumerate(catalogue)
    ]
    script.append([assistant_message(FINAL_ANSWER)])
    model = ScriptedModel(script)
    agent = Agent(name="researcher", instructions="Find the price.", tools=[search], model=model)
    return Scenario(agent, model, executions)


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

    script = [
        [function_call("fetch", {"url": "/admin"}, call_id=f"call_{i}")] for i in range(steps)
    ]
    script.append([assistant_message("I have no access.")])
    model = ScriptedModel(script)
    agent = Agent(name="researcher", instructions="Read the page.", tools=[fetch], model=model)
    return Scenario(agent, model, executions)
