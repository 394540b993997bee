"""An unmodified Agno program whose model keeps asking for the same search (``agent``,
giving up after eight searches when nothing stops it), or that finds its answer and
streams it (``streamed``); run under ``opentelemetry-instrument`` by
test_opentelemetry_instrument.py. It prints what happened as one JSON line on stderr."""

from __future__ import annotations

import json
import sys

from scripted_models import QUESTION, CountingSearch, ScriptedModel, new_agent, productive_agent

from otel_loopguard.engine.decisions import LoopGuardInterrupt


def looping(search: CountingSearch):
    def script(n: int):
        return [("search", {"query": "pricing"})] if n <= 8 else "gave up"

    return new_agent(ScriptedModel(script=script), [search.tool])


def main(scenario: str) -> dict[str, object]:
    search = CountingSearch()
    agent = looping(search) if scenario == "agent" else productive_agent(search)
    outcome: dict[str, object] = {"interrupted": False}
    try:
        if scenario == "streamed":
            for _event in agent.run(QUESTION, stream=True):
                pass
        else:
            outcome["answer"] = agent.run(QUESTION).content
    except LoopGuardInterrupt as interrupt:
        outcome = {"interrupted": True, "detectors": list(interrupt.decision.detectors)}
    outcome["executions"] = len(search.executions)
    outcome["model_calls"] = agent.model.calls
    return outcome


print(json.dumps(main(sys.argv[1])), file=sys.stderr)
