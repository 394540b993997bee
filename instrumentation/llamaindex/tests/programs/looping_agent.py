"""A user's LlamaIndex program with no OpenTelemetry code in it: run under opentelemetry-instrument.

Prints one JSON line to stderr: whether LoopGuardInterrupt reached this caller, how many
times the tool body really ran, and the answer. ``--stream`` consumes ``stream_events()``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents import ToolCounter, build_agent, looping_script, run_to_end

from otel_loopguard import LoopGuardInterrupt


async def main() -> None:
    counter = ToolCounter()
    agent = build_agent(looping_script(give_up_after=12), counter)
    outcome = {"interrupted": False, "answer": None}
    try:
        result = await asyncio.wait_for(run_to_end(agent, stream="--stream" in sys.argv), 60)
        outcome["answer"] = str(result)
    except LoopGuardInterrupt as interrupt:
        outcome["interrupted"] = True
        outcome["action"] = interrupt.decision.action.value
    outcome["executions"] = counter["search"]
    print(json.dumps(outcome), file=sys.stderr)


if __name__ == "__main__":
    asyncio.run(main())
