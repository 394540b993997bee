"""A small agent for the opentelemetry-instrument test; runs as its own program.

Phase 1 is an agent instrumented by someone else: plain GenAI-semconv spans from the OTel
API, stuck calling `search` with the same query. Only the span processor (loaded through
the `loopguard` entry point) can see that loop. Phase 2 is a hand-written agent using
`@loopguard_tool`: in enforce mode the gate interrupts it. It prints one JSON line on
stdout with what happened; the spans go to whatever exporter opentelemetry-instrument set.
"""

import json
import os
import sys

from opentelemetry import trace

if os.environ.get("AGENT_OWN_PROVIDER"):
    # a program that configures tracing itself, after opentelemetry-instrument's start-up
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

    own = TracerProvider()
    own.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
    trace.set_tracer_provider(own)

from helpers import foreign_tool_span  # this folder is the program's sys.path[0]

from otel_loopguard.engine.decisions import LoopGuardInterrupt
from otel_loopguard.guard.decorators import agent_run, loopguard_tool

tracer = trace.get_tracer("foreign.agent.framework")


def foreign_agent() -> None:
    with tracer.start_as_current_span(
        "invoke_agent researcher",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "researcher"},
    ):
        for i in range(6):
            with foreign_tool_span(
                tracer,
                "search",
                call_id=f"call_{i}",
                arguments='{"query": "pricing"}',
                result="no results",
            ):
                pass


executed = []


@loopguard_tool
def lookup(query: str) -> str:
    executed.append(query)
    return "nothing found"


def hand_written_agent() -> str:
    try:
        with agent_run("helper"):
            for _ in range(10):
                lookup("same thing")
    except LoopGuardInterrupt as interrupt:
        return f"interrupted: {interrupt.decision.action.value}"
    return "finished"


foreign_agent()
outcome = hand_written_agent()
print(json.dumps({"outcome": outcome, "executed": len(executed)}), flush=True)
getattr(trace.get_tracer_provider(), "force_flush", lambda: None)()
sys.exit(0)
