"""An unmodified AutoGen program whose model keeps asking for the same search (``agent``) or
whose two agents keep handing the task back and forth (``swarm``); run under
``opentelemetry-instrument`` by test_opentelemetry_instrument.py. It prints what happened as
one JSON line on stderr."""

from __future__ import annotations

import asyncio
import json
import sys

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.teams import Swarm
from scripted_models import CountingSearch, ScriptedClient, always

from otel_loopguard.engine.decisions import LoopGuardInterrupt


def looping_agent(search: CountingSearch) -> AssistantAgent:
    return AssistantAgent(
        "researcher",
        model_client=ScriptedClient(always([("search", {"query": "pricing"})])),
        tools=[search.tool],
        max_tool_iterations=10,
    )


def ping_pong() -> Swarm:
    alice = AssistantAgent(
        "alice", model_client=ScriptedClient(always([("transfer_to_bob", {})])), handoffs=["bob"]
    )
    bob = AssistantAgent(
        "bob", model_client=ScriptedClient(always([("transfer_to_alice", {})])), handoffs=["alice"]
    )
    return Swarm([alice, bob], termination_condition=MaxMessageTermination(20))


async def main(scenario: str) -> dict[str, object]:
    search = CountingSearch()
    runnable = looping_agent(search) if scenario == "agent" else ping_pong()
    outcome: dict[str, object] = {"interrupted": False}
    try:
        result = await runnable.run(task="find the pricing page")
        outcome["stop_reason"] = result.stop_reason
    except LoopGuardInterrupt as interrupt:
        outcome = {"interrupted": True, "detectors": list(interrupt.decision.detectors)}
    outcome["executions"] = len(search.executions)
    return outcome


print(json.dumps(asyncio.run(main(sys.argv[1]))), file=sys.stderr)
