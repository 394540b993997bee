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

Most spans of a real service are not GenAI spans: a second workload (an HTTP server span
with database client spans in it) shows what the processor costs on those.

The last section says where the time of a tool span goes, on the same pre-made spans fed to
``on_end`` in a loop (thread CPU time, median of blocks): the span view and class, the two
signatures, the rest of the mapping and bookkeeping, the monitor's detectors and policy;
and the floor of any processor that does this job at all in Python (read the class, the
tool name, the arguments and the result from the attribute dict, one BLAKE2b hash each
for arguments and result), as a fraction of the plain SDK span.

Run: ``python benchmarks/span_overhead.py [--spans N] [--rounds R] [--threads T]``.
Prints medians and ``ratio <= 1.5: PASS|FAIL`` for single-threaded and T-thread runs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind

from otel_loopguard.config import LoopGuardConfig
from otel_loopguard.enforcement import LoopGuard
from otel_loopguard.monitor import Monitor
from otel_loopguard.processor import LoopGuardSpanProcessor
from otel_loopguard.signatures import call_signature, output_signature
from otel_loopguard.span_mapping import classify_parts
from otel_loopguard.span_view import from_readable_span, span_attributes

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


def web_service(
    provider: TracerProvider, worker: int, spans: int, barrier: threading.Barrier
) -> None:
    """Not GenAI: HTTP server spans, each with three database client spans in it."""
    tracer = provider.get_tracer("bench.web")
    barrier.wait()
    for i in range(0, spans, 4):
        with tracer.start_as_current_span(
            "GET /items/{id}",
            kind=SpanKind.SERVER,
            attributes={"http.request.method": "GET", "http.route": "/items/{id}"},
        ) as server:
            for j in range(3):
                with tracer.start_as_current_span(
                    "SELECT items",
                    kind=SpanKind.CLIENT,
                    attributes={
                        "db.system.name": "postgresql",
                        "db.query.text": f"SELECT * FROM items WHERE id = {i + j}",
                    },
                ):
                    pass
            server.set_attribute("http.response.status_code", 200)


WORKLOADS = {"tool": agent, "web": web_service}


def one_round(
    provider: TracerProvider, threads: int, spans: int, workload: str = "tool"
) -> tuple[float, float]:
    """(CPU seconds, wall seconds) per span over all threads, flush included."""
    barrier = threading.Barrier(threads + 1)
    target = WORKLOADS[workload]
    workers = [
        threading.Thread(target=target, args=(provider, w, spans, barrier)) for w in range(threads)
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


def compare(
    threads: int,
    spans: int,
    rounds: int,
    workload: str = "tool",
    setups: Sequence[str] = SETUPS,
) -> dict[str, tuple[float, float]]:
    """Median (CPU, wall) seconds per span for each set-up, rounds interleaved."""
    providers = {setup: make_provider(setup) for setup in setups}
    for provider in providers.values():
        one_round(provider, threads, 200, workload)  # warm-up: imports, caches, allocator
    times: dict[str, list[tuple[float, float]]] = {setup: [] for setup in setups}
    for _ in range(rounds):
        for setup in setups:
            times[setup].append(one_round(providers[setup], threads, spans, workload))
    for provider in providers.values():
        provider.shutdown()
    return {
        setup: (
            statistics.median(cpu for cpu, _ in values),
            statistics.median(wall for _, wall in values),
        )
        for setup, values in times.items()
    }


class _Keep(SpanProcessor):
    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.spans.append(span)


def _block_cpu(work: Callable[[], object], count: int, blocks: int = 15) -> float:
    """Median thread CPU seconds per item over ``blocks`` runs of ``work`` (``count`` items)."""
    samples = []
    for _ in range(blocks):
        start = time.thread_time_ns()
        work()
        samples.append((time.thread_time_ns() - start) / count / 1e9)
    return statistics.median(samples)


def breakdown(spans: int = 1_000) -> dict[str, float]:
    """Seconds per tool span of each part of ``on_end``, and of the plain SDK span."""
    keeper = _Keep()
    provider = TracerProvider()
    provider.add_span_processor(keeper)
    barrier = threading.Barrier(1)
    start = time.thread_time_ns()
    agent(provider, 0, spans, barrier)
    made = [s for s in keeper.spans if s.name.startswith("execute_tool")]
    config = LoopGuardConfig()

    def plain() -> None:
        agent(TracerProvider(), 0, spans, barrier)

    def on_end(detectors: list[Any] | None) -> Callable[[], None]:
        def work() -> None:
            monitor = Monitor(config, detectors=detectors) if detectors is not None else None
            processor = LoopGuardSpanProcessor(
                LoopGuard(config, monitor=monitor, tracer_provider=provider)
            )
            for span in made:
                processor.on_end(span)

        return work

    def view() -> None:
        for span in made:
            classify_parts(span.name, span_attributes(span))
            from_readable_span(span, detection_only=True)

    pairs = [
        (
            json.loads(s.attributes["gen_ai.tool.call.arguments"]),
            s.attributes["gen_ai.tool.call.result"],
        )
        for s in made
    ]

    def signatures() -> None:
        for arguments, result in pairs:
            call_signature("search", arguments)
            output_signature(result)

    def floor() -> None:
        blake2b = hashlib.blake2b
        for span in made:
            attrs = span_attributes(span)
            attrs.get("gen_ai.operation.name")
            attrs.get("gen_ai.tool.name")
            blake2b(attrs["gen_ai.tool.call.arguments"].encode(), digest_size=8).hexdigest()
            blake2b(attrs["gen_ai.tool.call.result"].encode(), digest_size=8).hexdigest()

    del start
    count = len(made)
    return {
        "plain": _block_cpu(plain, count),
        "on_end": _block_cpu(on_end(None), count),
        "no_detectors": _block_cpu(on_end([]), count),
        "view": _block_cpu(view, count),
        "signatures": _block_cpu(signatures, count),
        "floor": _block_cpu(floor, count),
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
    print("\nspans that are not GenAI (HTTP server span + 3 database client spans)")
    for threads in (1, args.threads):
        result = compare(threads, args.spans, args.rounds, "web", ("plain", "loopguard"))
        plain_cpu, guard_cpu = result["plain"][0], result["loopguard"][0]
        print(
            f"{threads:>16}{plain_cpu * 1e6:>16.1f}{guard_cpu * 1e6:>16.1f}"
            f"{guard_cpu / plain_cpu:>16.2f}"
        )
    parts = breakdown()
    plain = parts["plain"]
    detectors = parts["on_end"] - parts["no_detectors"]
    mapping = parts["no_detectors"] - parts["view"] - parts["signatures"]
    print(
        "\nwhere a tool span's on_end goes (pre-made spans, thread CPU time, µs per span; "
        "share of a plain SDK span without the batch processor)"
    )
    rows = [
        ("plain SDK span (no processors)", plain),
        ("loopguard on_end, all of it", parts["on_end"]),
        ("  span view + class", parts["view"]),
        ("  call + output signatures", parts["signatures"]),
        ("  events, run identity, bookkeeping", mapping),
        ("  detectors + policy", detectors),
        ("floor: 4 attribute reads + 2 hashes", parts["floor"]),
    ]
    for label, seconds in rows:
        print(f"  {label:<40}{seconds * 1e6:>8.1f}{seconds / plain:>8.2f}")
    print(f"ratio <= {TARGET_RATIO}: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
