"""A process with the Langfuse client and our span processor on one tracer provider, added
in the order ``sys.argv[1]`` says (``langfuse-first`` or ``ours-first``), the global
provider set as an application would; runs a looping and a productive agent, prints one
JSON line, and exits through Langfuse's own ``atexit`` shutdown (no explicit flush)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents import looping_script, make_agent, productive_script
from conftest import OFFLINE
from langfuse import Langfuse
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.scripted_models import ToolCounter

from otel_loopguard import LoopGuardSpanProcessor
from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.guard import LoopGuard, set_guard

provider = TracerProvider()
trace.set_tracer_provider(provider)
guard = LoopGuard(LoopGuardConfig(mode="observe"), tracer_provider=provider)
set_guard(guard)
decided: list[str] = []
guard.on_decision(lambda decision, event: decided.append(decision.action.value))
count = metric_counter(SimpleNamespace(guard=guard))  # the guard's metrics, in memory


def langfuse() -> None:
    Langfuse(tracer_provider=provider, span_exporter=InMemorySpanExporter(), **OFFLINE)


def ours() -> None:
    provider.add_span_processor(LoopGuardSpanProcessor(guard, tracer_provider=provider))


for add in (langfuse, ours) if sys.argv[1] == "langfuse-first" else (ours, langfuse):
    add()
outcome: dict[str, object] = {}
looping = ToolCounter()
outcome["looping"] = make_agent(looping_script(8), looping)("How much is the Pro plan?")
outcome["looping_stops"] = decided.count("stop")
decided.clear()
outcome["productive"] = make_agent(productive_script(), ToolCounter())("How much?")
outcome["productive_stops"] = decided.count("stop")
outcome["internal_errors"] = count("loopguard.internal_errors")
print(json.dumps(outcome), flush=True)
