"""Cost of a tool span in 1,000 concurrent asyncio agent runs, loop guard vs the plain SDK.

Usage::

    python benchmarks/asyncio_runs.py [--runs 1000] [--tools 5] [--rounds 5]

``span_overhead.py`` measures threads; async agents (most of today's frameworks) keep many
runs open at once on one event loop instead, each in its own task and so its own context.
Here ``--runs`` tasks run at the same time under ``asyncio.gather``; each opens an
``invoke_agent`` span (its run) and makes ``--tools`` semconv ``execute_tool`` spans with
distinct arguments (a healthy agent: every detector does its full work), yielding to the
loop inside every tool call so the runs really interleave. The same script runs on a plain
SDK ``TracerProvider`` and on one with ``LoopGuardSpanProcessor``, both with a
``BatchSpanProcessor`` into an exporter that drops everything; rounds alternate between the
two and each round ends with ``force_flush``.

Figures are CPU seconds of the process (all threads) per tool span, medians of the rounds,
and their ratio. The per-span cost includes the agent's own asyncio scheduling, the same on
both sides. Exit status 1 when the ratio exceeds 1.5.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.append(str(Path(__file__).resolve().parent.parent))  # installed package first

from span_overhead import agent_attributes, make_provider, tool_attributes

TARGET_RATIO = 1.5
SETUPS = ("plain", "loopguard")


async def _agent(tracer, worker: int, tools: int) -> None:
    with tracer.start_as_current_span(
        f"invoke_agent worker{worker}", attributes=agent_attributes("async-agent")
    ):
        for i in range(tools):
            with tracer.start_as_current_span(
                "execute_tool search",
                attributes=tool_attributes(f"call_{worker}_{i}", {"query": f"w{worker} topic {i}"}),
            ) as span:
                await asyncio.sleep(0)  # the tool awaits I/O: other runs go on meanwhile
                span.set_attribute("gen_ai.tool.call.result", f"{i} results for w{worker}")


def one_round(provider, runs: int, tools: int) -> float:
    """CPU seconds per tool span for ``runs`` concurrent runs, flush included."""
    tracer = provider.get_tracer("bench.async")

    async def main() -> None:
        await asyncio.gather(*(_agent(tracer, w, tools) for w in range(runs)))

    cpu = time.process_time()
    asyncio.run(main())
    provider.force_flush()
    return (time.process_time() - cpu) / (runs * tools)


def compare(runs: int = 1_000, tools: int = 5, rounds: int = 5) -> dict[str, float]:
    """Median CPU seconds per tool span for each set-up, rounds interleaved."""
    providers = {setup: make_provider(setup) for setup in SETUPS}
    for provider in providers.values():
        one_round(provider, min(runs, 100), 2)  # warm-up
    times: dict[str, list[float]] = {setup: [] for setup in SETUPS}
    for _ in range(rounds):
        for setup in SETUPS:
            times[setup].append(one_round(providers[setup], runs, tools))
    for provider in providers.values():
        provider.shutdown()
    return {setup: statistics.median(values) for setup, values in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1_000, help="concurrent runs (tasks)")
    parser.add_argument("--tools", type=int, default=5, help="tool spans per run")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    result = compare(args.runs, args.tools, args.rounds)
    ratio = result["loopguard"] / result["plain"]
    print(
        f"{args.runs:,} concurrent asyncio runs x {args.tools} tool spans, "
        f"median of {args.rounds} rounds (CPU time of the process)"
    )
    print(f"plain SDK  {result['plain'] * 1e6:8.1f} µs per tool span")
    print(f"loopguard  {result['loopguard'] * 1e6:8.1f} µs per tool span")
    print(
        f"ratio      {ratio:8.2f}  (target <= {TARGET_RATIO}: {'PASS' if ratio <= 1.5 else 'FAIL'})"
    )
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    raise SystemExit(main())
