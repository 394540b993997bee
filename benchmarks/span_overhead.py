"""Cost of a tool span with the loop-guard processor vs the plain SDK, side by side.

Both set-ups use the real SDK: a ``TracerProvider`` with a ``BatchSpanProcessor`` and an
exporter that drops everything (so the exporter's own cost does not hide ours); the second
also has ``LoopGuardSpanProcessor``. Each measured unit is one semconv ``execute_tool`` span
(name, call id, arguments, result), made the way an instrumentation makes it, inside an
open ``invoke_agent`` span; arguments differ per call (a healthy agent), so every detector
does its full work rather than the cheap path of a stopped run. Rounds alternate between the
set-ups; each round ends with ``force_flush`` (the batch processor's work is counted).

Time is the process's CPU time (all threads, the batch exporter thread included) per tool
span: on a shared machine wall time mostly measures the neighbours. Wall time is printed
too. A third set-up, loopguard with no detectors, splits the cost: span mapping, signatures
and run bookkeeping on one side, the detectors and policy on the other.

Run: ``python benchmarks/span_overhead.py [--spans N] [--rounds R] [--threads T]``.
Prints medians and ``ratio <= 1.5: PASS|FAIL`` for single-threaded and T-thread runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from otel_loopguard.config import LoopGuardConfig
from otel_loopguard.enforcement import LoopGuard
from otel_loopguard.monitor import Monitor
from otel_loopguard.processor import LoopGuardSpanProcessor

TARGET_RATIO = 1.5


class DropExporter(SpanExporter):
    """Accepts and forgets every span."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


def make_provider(setup: str) -> TracerProvider:
    """``plain`` SDK, ``loopguard``, or ``no-detectors`` (loopguard with an empty detector set)."""
    provider = TracerProvider()
    if setup != "plain":
        config = LoopGuardConfig()
        monitor = Monitor(config, detectors=[]) if setup == "no-detectors" else None
        guard = LoopGuard(config, monitor=monitor, tracer_provider=provider)
        provider.add_span_processor(LoopGuardSpanProcessor(guard))
    provider.add_span_processor(BatchSpanProcessor(DropExporter(), max_queue_size=65_536))
    return provider


def agent(provider: TracerProvider, worker: int, spans: int, barrier: threading.Barrier) -> None:
    tracer = provider.get_tracer("bench.framework")
    barrier.wait()
    with tracer.start_as_current_span(
        f"invoke_agent worker{worker}",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": f"w{worker}"},
    ):
        for i in range(spans):
            with tracer.start_as_current_span(
                "execute_tool search",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "search",
                    "gen_ai.tool.call.id": f"call_{worker}_{i}",
                    "gen_ai.tool.call.arguments": json.dumps({"query": f"topic {i}", "page": 1}),
                },
            ) as span:
                span.set_attribute("gen_ai.tool.call.result", f"{i % 7} results for topic {i}")


def one_round(provider: TracerProvider, threads: int, spans: int) -> tuple[float, float]:
    """(CPU seconds, wall seconds) per tool span over all threads, flush included."""
    barrier = threading.Barrier(threads + 1)
    workers = [
        threading.Thread(target=agent, args=(provider, w, spans, barrier)) for w in range(threads)
    ]
    for worker in workers:
        worker.start()
    cpu = time.process_time()
    barrier.wait()
    wall = time.perf_counter()
    for worker in workers:
        worker.join()
    provider.force_flush()
    count = threads * spans
    return (time.process_time() - cpu) / count, (time.perf_counter() - wall) / count


SETUPS = ("plain", "loopguard", "no-detectors")


def compare(threads: int, spans: int, rounds: int) -> dict[str, tuple[float, float]]:
    """Median (CPU, wall) seconds per span for each set-up, rounds interleaved."""
    providers = {setup: make_provider(setup) for setup in SETUPS}
    for provider in providers.values():
        one_round(provider, threads, 200)  # warm-up: imports, caches, allocator
    times: dict[str, list[tuple[float, float]]] = {setup: [] for setup in SETUPS}
    for _ in range(rounds):
        for setup in SETUPS:
            times[setup].append(one_round(providers[setup], threads, spans))
    for provider in providers.values():
        provider.shutdown()
    return {
        setup: (
            statistics.median(cpu for cpu, _ in values),
            statistics.median(wall for _, wall in values),
        )
        for setup, values in times.items()
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=2_000, help="tool spans per thread per round")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args()
    print(
        f"µs per tool span, median of {args.rounds} rounds, {args.spans} spans per thread "
        "(CPU time of the process; wall time in brackets)"
    )
    header = ["threads", "plain SDK", "loopguard", "ratio", "no detectors", "ratio"]
    print("".join(f"{h:>16}" for h in header))
    ok = True
    for threads in (1, args.threads):
        result = compare(threads, args.spans, args.rounds)
        plain_cpu = result["plain"][0]
        cells = [str(threads)]
        for setup in SETUPS:
            cpu, wall = result[setup]
            cells.append(f"{cpu * 1e6:.1f} ({wall * 1e6:.0f})")
            if setup != "plain":
                cells.append(f"{cpu / plain_cpu:.2f}")
        ok = ok and result["loopguard"][0] / plain_cpu <= TARGET_RATIO
        print("".join(f"{c:>16}" for c in cells))
    print(f"ratio <= {TARGET_RATIO}: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
