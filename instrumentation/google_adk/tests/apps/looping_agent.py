"""An unmodified ADK program whose model keeps asking for the same search (``agent``) or
whose two sub-agents keep transferring the task back and forth (``ping_pong``), or that
finds its answer and streams it (``streamed``); run under
``opentelemetry-instrument`` by test_opentelemetry_instrument.py. It prints what happened
as one JSON line on stderr."""

from __future__ import annotations

import asyncio
import json
import sys

from google.adk.agents import LlmAgent
from google.adk.agents.invocation_context import LlmCallsLimitExceededError
from google.adk.agents.run_config import RunConfig, StreamingMode
from scripted_models import (
    CountingSearch,
    ScriptedModel,
    looping_agent,
    new_runner,
    productive_agent,
    run_events,
)

from otel_loopguard.engine.decisions import LoopGuardInterrupt


def ping_pong() -> LlmAgent:
    def transfer(to: str) -> list[tuple[str, dict]]:
        return [("transfer_to_agent", {"agent_name": to})]

    return LlmAgent(
        name="coordinator",
        model=ScriptedModel(script=lambda n: transfer("alice")),
        sub_agents=[
            LlmAgent(name="alice", model=ScriptedModel(script=lambda n: transfer("bob"))),
            LlmAgent(name="bob", model=ScriptedModel(script=lambda n: transfer("alice"))),
        ],
    )


async def main(scenario: str) -> dict[str, object]:
    search = CountingSearch()
    agents = {"agent": looping_agent, "streamed": productive_agent}
    agent = agents[scenario](search) if scenario in agents else ping_pong()
    outcome: dict[str, object] = {"interrupted": False}
    # ADK's own limit ends a loop nobody stops (observe mode)
    config = RunConfig(max_llm_calls=8)
    if scenario == "streamed":
        config.streaming_mode = StreamingMode.SSE
    try:
        await asyncio.wait_for(run_events(new_runner(agent), run_config=config), timeout=60)
    except LlmCallsLimitExceededError:
        outcome["adk_limit"] = True
    except LoopGuardInterrupt as interrupt:
        outcome = {"interrupted": True, "detectors": list(interrupt.decision.detectors)}
    outcome["executions"] = len(search.executions)
    outcome["model_calls"] = agent.model.calls
    return outcome


print(json.dumps(asyncio.run(main(sys.argv[1]))), file=sys.stderr)
