"""An unmodified application: a hand-written chat agent over the real OpenAI SDK that calls
``search`` with the same query every turn, run under ``opentelemetry-instrument`` by
test_viewing.py with its spans going to the Collector over OTLP.

It knows nothing of otel-loopguard but the interrupt it may receive; the model is the suites'
scripted OpenAI API (no network here). It prints what it saw as one JSON line on stderr.
"""

from __future__ import annotations

import json
import sys

from opentelemetry import trace
from otel_loopguard_testing import CHAT_TOOL_SCHEMAS, run_chat_tool_loop
from otel_loopguard_testing.scripted_openai import ScriptedAPI, Turn

from otel_loopguard.engine.decisions import LoopGuardInterrupt

TURNS = 8
api = ScriptedAPI([Turn(tool_calls=[("search", {"query": "pricing page"})]) for _ in range(TURNS)])
client = api.client()
searches: list[str] = []


def search(query: str) -> str:
    searches.append(query)
    return "no results"


def complete(messages: list[dict]) -> object:
    return client.chat.completions.create(
        model="gpt-test", messages=messages, tools=CHAT_TOOL_SCHEMAS
    )


outcome: dict[str, object] = {"interrupted": False}
try:
    run_chat_tool_loop(complete, trace.get_tracer("app"), {"search": search}, max_turns=TURNS)
except LoopGuardInterrupt as interrupt:
    outcome = {"interrupted": True, "detectors": list(interrupt.decision.detectors)}
outcome["searches"] = len(searches)
outcome["requests"] = len(api.requests)
print(json.dumps(outcome), file=sys.stderr)
