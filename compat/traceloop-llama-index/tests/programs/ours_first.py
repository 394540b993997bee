"""Our LlamaIndex package instrumented before OpenLLMetry's (the other order of the suite's
session), in a process of its own: their span handler, once added to LlamaIndex's
dispatcher, cannot be removed. Prints one JSON line: what the application saw."""

from __future__ import annotations

import asyncio
import json
import sys

sys.path.insert(0, sys.argv[1])  # instrumentation/llamaindex/tests

from agents import ToolCounter, build_agent, looping_script, productive_script, run_to_end
from opentelemetry.instrumentation.llamaindex import LlamaIndexInstrumentor
from otel_loopguard_llamaindex import LlamaIndexInstrumentor as OurInstrumentor
from otel_loopguard_testing import Testbed, metric_counter

from otel_loopguard import LoopGuardInterrupt

bed = Testbed()
harness = bed.install(mode="enforce")
OurInstrumentor().instrument(tracer_provider=bed.provider)
LlamaIndexInstrumentor().instrument(tracer_provider=bed.provider)
count = metric_counter(harness)

outcome: dict[str, object] = {}
looping = ToolCounter()
try:
    asyncio.run(run_to_end(build_agent(looping_script(), looping)))
    outcome["looping"] = "completed"
except LoopGuardInterrupt:
    outcome["looping"] = "interrupted"
except BaseException as exc:  # what the application would have seen raised
    outcome["looping"] = repr(exc)
outcome["executions"] = looping["search"]
answer = asyncio.run(run_to_end(build_agent(productive_script(), ToolCounter())))
outcome["answer"] = str(answer)
outcome["their_tool_spans"] = len(harness.named("FunctionTool.task"))
outcome["internal_errors"] = count("loopguard.internal_errors")
print(json.dumps(outcome))
