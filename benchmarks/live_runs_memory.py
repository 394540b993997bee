"""Memory held per live agent run, and in total for 10,000 live runs, loop guard vs plain SDK.

Usage::

    python benchmarks/live_runs_memory.py [--runs 10000] [--tools 5]

A production process may have thousands of agent runs open at once (a server handling
sessions). Each run here is an open ``invoke_agent`` span that has already made ``--tools``
semconv ``execute_tool`` spans (distinct arguments and results); all ``--runs`` agent spans
stay open while memory is measured, so the loop guard holds a live run (monitor state,
detector state, trace bookkeeping) for each. The same spans are made on a plain SDK
``TracerProvider`` and on one with ``LoopGuardSpanProcessor`` (both with a
``BatchSpanProcessor`` into an exporter that drops everything, flushed before measuring).

Memory is what ``tracemalloc`` counts as allocated and still held after a garbage
collection, from before the first span to the moment all runs are open, in each set-up;
the loop guard's own cost is the difference. Then every agent span ends, and the memory
still held shows whether finished runs are released. ``OTEL_LOOPGUARD_MAX_RUNS`` (default
10,000) caps live runs, so 10,000 is the largest count that keeps every run.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.append(str(Path(__file__).resolve().parent.parent))  # installed package first

from opentelemetry import trace
from span_overhead import agent_attributes, make_provider, tool_attributes


@dataclass
class Held:
    setup: str
    live_bytes: int  # held with every run open
    after_end_bytes: int  # held once every agent span ended
    active_runs: int  # what the monitor tracks with every run open (0 for plain)


def _held() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def measure(setup: str, runs: int, tools: int) -> Held:
    provider = make_provider(setup)
    tracer = provider.get_tracer("bench.memory")
    processor = provider._active_span_processor._span_processors[0]
    guard = getattr(processor, "guard", None) or getattr(processor, "_guard", None)
    tracemalloc.start()
    start = _held()
    agents = []
    for run in range(runs):
        agent = tracer.start_span(
            f"invoke_agent session{run}",
            attributes=agent_attributes("svc"),
        )
        context = trace.set_span_in_context(agent)
        for i in range(tools):
            with tracer.start_as_current_span(
                "execute_tool search",
                context=context,
                attributes=tool_attributes(f"call_{run}_{i}", {"query": f"s{run} topic {i}"}),
            ) as span:
                span.set_attribute("gen_ai.tool.call.result", f"{i} results for s{run}")
        agents.append(agent)
    provider.force_flush()
    live = _held() - start
    active = guard.monitor.active_runs if guard is not None else 0
    for agent in agents:
        agent.end()
    provider.force_flush()
    del agents
    after = _held() - start
    tracemalloc.stop()
    provider.shutdown()
    return Held(setup, live, after, active)


def compare(runs: int = 10_000, tools: int = 5) -> dict[str, Held]:
    return {setup: measure(setup, runs, tools) for setup in ("plain", "loopguard")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000, help="agent runs open at once")
    parser.add_argument("--tools", type=int, default=5, help="tool spans made in each run")
    args = parser.parse_args(argv)
    result = compare(args.runs, args.tools)
    plain, guarded = result["plain"], result["loopguard"]
    extra = guarded.live_bytes - plain.live_bytes
    print(f"{args.runs:,} live runs, {args.tools} tool spans each (tracemalloc, after gc)")
    print(f"plain SDK, all runs open:  {plain.live_bytes / 2**20:8.1f} MiB")
    print(
        f"loopguard, all runs open:  {guarded.live_bytes / 2**20:8.1f} MiB "
        f"({guarded.active_runs:,} runs tracked; ratio {guarded.live_bytes / plain.live_bytes:.2f})"
    )
    print(
        f"loopguard's own: {extra / 2**20:.1f} MiB in total, {extra / args.runs / 1024:.1f} KiB "
        "per live run"
    )
    print(
        f"after every run ended: plain {plain.after_end_bytes / 2**20:.1f} MiB, "
        f"loopguard {guarded.after_end_bytes / 2**20:.1f} MiB still held"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
