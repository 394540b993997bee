"""An unmodified application: a chat agent over ``litellm.completion``, run under
``opentelemetry-instrument`` by test_opentelemetry_instrument.py.

It knows nothing of otel-loopguard except the interrupt it may receive; LiteLLM talks to
the scripted API on a loopback port (no network here). It prints what it saw as one JSON
line on stderr.
"""

from __future__ import annotations

import json
import os
import sys

from agent_loop import run_agent
from opentelemetry import trace
from otel_loopguard_testing.scripted_openai import ScriptedAPI, Turn

from otel_loopguard.engine.decisions import LoopGuardInterrupt

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

api = ScriptedAPI(
    [
        Turn(tool_calls=[("search", {"query": f"q{i}"})], input_tokens=15, output_tokens=5)
        for i in range(6)
    ]
)
base, stop = api.serve()
outcome = {"interrupted": False}
try:
    run_agent(base, trace.get_tracer("app"), {"search": lambda query: query}, max_tokens=8)
except LoopGuardInterrupt as interrupt:
    outcome = {"interrupted": True, "detectors": list(interrupt.decision.detectors)}
finally:
    stop()
outcome["requests"] = len(api.requests)
print(json.dumps(outcome), file=sys.stderr)
