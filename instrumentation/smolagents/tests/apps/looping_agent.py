"""An unmodified smolagents program whose model keeps asking for the same search; run
under ``opentelemetry-instrument`` by test_opentelemetry_instrument.py. It prints what
happened as one JSON line on stderr."""

from __future__ import annotations

from otel_loopguard_testing import reported_outcome
from scripted_models import CountingSearch, ScriptedToolCallingModel
from smolagents import ToolCallingAgent
from smolagents.monitoring import LogLevel

search = CountingSearch(lambda query, n: "no results")
agent = ToolCallingAgent(
    tools=[search.tool],
    model=ScriptedToolCallingModel(lambda step: ("search", {"query": "pricing"})),
    max_steps=10,
    verbosity_level=LogLevel.OFF,
)
with reported_outcome(lambda: len(search.executions)) as outcome:
    outcome["answer"] = str(agent.run("find the pricing page"))
