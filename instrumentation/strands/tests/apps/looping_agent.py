"""An unmodified Strands program whose model keeps asking for the same search (``agent``),
that finds its answer and streams it (``streamed``), or whose two swarm agents keep handing
the task back and forth (``swarm``); run under ``opentelemetry-instrument`` by
test_opentelemetry_instrument.py. It prints what happened as one JSON line on stderr."""

from __future__ import annotations

import asyncio
import json
import sys

from scripted_models import CountingSearch, looping_agent, productive_agent
from strands.multiagent import Swarm
from test_handoffs import ping_pong

from otel_loopguard.engine.decisions import LoopGuardInterrupt


async def main(scenario: str) -> dict[str, object]:
    search = CountingSearch(lambda query, n: f"result {n}" if scenario == "streamed" else "none")
    outcome: dict[str, object] = {"interrupted": False}
    model_calls = 0
    try:
        if scenario == "swarm":
            swarm: Swarm = ping_pong()
            result = await asyncio.wait_for(swarm.invoke_async("settle the invoice"), 60)
            outcome["swarm_status"] = result.status.value
        elif scenario == "streamed":
            agent = productive_agent(search)
            async for _event in agent.stream_async("find it"):
                pass
            model_calls = agent.model.calls
        else:
            agent = looping_agent(search)
            try:
                await asyncio.wait_for(agent.invoke_async("What is the weather in Paris?"), 60)
            finally:
                model_calls = agent.model.calls
    except LoopGuardInterrupt as interrupt:
        outcome = {"interrupted": True, "detectors": list(interrupt.decision.detectors)}
    outcome["executions"] = len(search.executions)
    outcome["model_calls"] = model_calls
    return outcome


print(json.dumps(asyncio.run(main(sys.argv[1]))), file=sys.stderr)
