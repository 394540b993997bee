"""An unmodified smolagents program whose model keeps asking for the same search; run
under ``opentelemetry-instrument`` by test_opentelemetry_instrument.py. It prints what
happened as one JSON line on stderr."""

from __future__ import annotations

import json
import sys

from scripted_models import CountingSearch, ScriptedToolCallingModel
from smolagents import ToolCallingAgent
from smolagents.monitoring import LogLevel

from otel_loopguard.engine.decisions import LoopGuardInterrupt

search = CountingSearch(lambda query, n: "no results")
agent = ToolCallingAgent(
    tools=[search.tool],
    model=ScriptedToolCallingModel(lambda step: ("search", {"query": "pricing"})),
    max_steps=10,
    verbosity_level=LogLevel.OFF,
)
outcome: dict[str, object] = {"interrupted": False}
try:
    outcome["answer"] = str(agent.run("find the pricing page"))
except LoopGuardInterrupt as interrupt:
    outcome = {"interrupted": True, "action": interrupt.decision.action.value}
outcome["executions"] = len(search.executions)
print(json.dumps(outcome), file=sys.stderr)
