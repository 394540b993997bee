"""A user's LlamaIndex program with no OpenTelemetry code in it: run under opentelemetry-instrument.

Prints one JSON line to stderr: whether LoopGuardInterrupt reached this caller, how many
times the tool body really ran, and the answer. ``--stream`` consumes ``stream_events()``.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents import ToolCounter, build_agent, looping_script, run_to_end
from otel_loopguard_testing import reported_outcome


async def main() -> None:
    counter = ToolCounter()
    agent = build_agent(looping_script(give_up_after=12), counter)
    with reported_outcome(lambda: counter["search"]) as outcome:
        result = await asyncio.wait_for(run_to_end(agent, stream="--stream" in sys.argv), 60)
        outcome["answer"] = str(result)


if __name__ == "__main__":
    asyncio.run(main())
