"""A user's program run under `opentelemetry-instrument` in the venv of installed wheels.

It knows nothing of otel-loopguard: an agent, instrumented by hand with the plain
OpenTelemetry API (GenAI semantic conventions), calls ``search`` with the same query over
and over. Only the loopguard span processor, loaded by `opentelemetry-instrument` through
the core's entry point, can see that loop. The program prints one JSON line with what it
did; the spans go to whatever exporter `opentelemetry-instrument` set up.
"""

import json
import sys

from opentelemetry import trace

tracer = trace.get_tracer("a.users.agent")
SEARCHES = 8

answers = []
with tracer.start_as_current_span(
    "invoke_agent researcher",
    attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "researcher"},
):
    for call in range(SEARCHES):
        with tracer.start_as_current_span(
            "execute_tool search",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "search",
                "gen_ai.tool.call.id": f"call_{call}",
                "gen_ai.tool.call.arguments": json.dumps({"query": "pricing"}),
                "gen_ai.tool.call.result": "no results",
            },
        ):
            answers.append(f"no results for call {call}")

print(json.dumps({"program": "finished", "searches": len(answers), "last": answers[-1]}))
sys.stdout.flush()
getattr(trace.get_tracer_provider(), "force_flush", lambda: None)()
sys.exit(0)
