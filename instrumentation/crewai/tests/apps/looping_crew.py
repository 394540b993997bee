"""An unmodified CrewAI program whose model keeps asking for the same search; run under
``opentelemetry-instrument`` by test_opentelemetry_instrument.py. It prints what happened
as one JSON line on stderr."""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

from scripted_crew import CountingSearch, make_crew, same_search

from otel_loopguard.engine.decisions import LoopGuardInterrupt

search = CountingSearch(lambda query, n: "no results")
outcome: dict[str, object] = {"interrupted": False}
try:
    make_crew(search, same_search, native=sys.argv[1] == "native").kickoff()
except LoopGuardInterrupt as interrupt:
    outcome = {"interrupted": True, "action": interrupt.decision.action.value}
except Exception as error:  # CrewAI's own guard, in observe mode
    outcome = {"interrupted": False, "error": type(error).__name__}
outcome["executions"] = len(search.executions)
print(json.dumps(outcome), file=sys.stderr)
