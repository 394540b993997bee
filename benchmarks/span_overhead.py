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
``on_start`` and ``on_end`` in a loop (thread CPU time, median of blocks): ``on_start``,
then in ``on_end`` the span view and class, the two signatures, the rest of the mapping and
the processor's bookkeeping, the monitor's own work without detectors (the same events fed
to a monitor with none), the detectors and policy; and the floor of any processor that
does this job at all in Python (read the class, the tool name, the arguments and the result
from the attribute dict, one BLAKE2b hash each for arguments and result), as a fraction of
the plain SDK span.

Run: ``python benchmarks/span_overhead.py [--spans N] [--rounds R] [--threads T]``.
Prints medians and ``ratio <= 1.5: PASS|FAIL`` for single-threaded and T-thread runs.

``--instructions`` instead counts instructions per span with ``valgrind --tool=callgrind``
for both workloads (a tool span; the not-GenAI HTTP span with its database spans), the plain
SDK beside loopguard: this script re-run as a child with N spans and with none, the
difference divided by N, each count the median of ``--repeat`` runs (the batch processor's
thread makes one run's count vary by about 2 %). Counts do not move with the host's load,
so two builds or two commits compare exactly where CPU time on a shared machine cannot.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from callgrind import collected
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind

from otel_loopguard import COMPILED
from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.monitor import Monitor
from otel_loopguard.engine.signatures import call_signature, output_signature
from otel_loopguard.guard import LoopGuard
from otel_loopguard.processor import LoopGuardSpanProcessor
from otel_loopguard.spans.classify import classify_parts
from otel_loopguard.spans.events import span_to_events
from otel_loopguard.spans.view import from_readable_span, span_attributes

TARGET_RATIO = 1.5
#: what the processor may add to spans that are not GenAI (CPU time)
WEB_TARGET_RATIO = 1.05


class DropExporter(SpanExporter):
    """Accepts and forgets every span."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


def agent_attributes(name: str) -> dict[str, str]:
    """A GenAI ``invoke_agent`` span's attributes (every benchmark's agents look alike)."""
    return {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name}


def tool_attributes(
    call_id: str, arguments: dict[str, Any], tool: str = "search"
) -> dict[str, str]:
    """A GenAI ``execute_tool`` span's attributes at its start: the call and its arguments."""
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool,
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.call.arguments": json.dumps(arguments),
    }


def make_provider(setup: str) -> TracerProvider:
    """``plain`` SDK (``plain-control`` is a second, identical one: the noise between two
    equal set-ups), ``loopguard``, or ``no-detectors`` (loopguard with no detectors)."""
    provider = TracerProvider()
    if not setup.startswith("plain"):
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
        f"invoke_agent worker{worker}", attributes=agent_attributes(f"w{worker}")
    ):
        for i in range(spans):
            with tracer.start_as_current_span(
                "execute_tool search",
                attributes=tool_attributes(
                    f"call_{worker}_{i}", {"query": f"topic {i}", "page": 1}
                ),
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


def _block_cpu(
    work: Callable[[Any], object],
    count: int,
    blocks: int = 15,
    setup: Callable[[], Any] = lambda: None,
) -> float:
    """Median thread CPU seconds per item over ``blocks`` runs of ``work(setup())`` (``count``
    items); ``setup`` (a fresh guard, say) is not timed."""
    samples = []
    for _ in range(blocks):
        prepared = setup()
        start = time.thread_time_ns()
        work(prepared)
        samples.append((time.thread_time_ns() - start) / count / 1e9)
    return statistics.median(samples)


def premade_tool_spans(spans: int) -> tuple[TracerProvider, list[ReadableSpan], ReadableSpan]:
    """``spans`` ended tool spans inside one agent span, made by the real SDK, to feed to a
    processor's hooks in a loop: the provider, the tool spans and the agent span."""
    keeper = _Keep()
    provider = TracerProvider()
    provider.add_span_processor(keeper)
    agent(provider, 0, spans, threading.Barrier(1))
    made = [s for s in keeper.spans if s.name.startswith("execute_tool")]
    (agent_span,) = [s for s in keeper.spans if s.name.startswith("invoke_agent")]
    return provider, made, agent_span


def processor_in_agent(
    provider: TracerProvider,
    agent_span: ReadableSpan,
    config: LoopGuardConfig,
    detectors: list[Any] | None = None,
) -> LoopGuardSpanProcessor:
    """A loopguard processor (``detectors``: the monitor's, None for the defaults) that has
    seen ``agent_span`` start: the premade tool spans run inside it."""
    monitor = Monitor(config, detectors=detectors) if detectors is not None else None
    processor = LoopGuardSpanProcessor(LoopGuard(config, monitor=monitor, tracer_provider=provider))
    processor.on_start(agent_span)  # type: ignore[arg-type]  # its agent span is open
    return processor


def breakdown(spans: int = 1_000) -> dict[str, float]:
    """Seconds per tool span of each part of the hooks, and of the plain SDK span."""
    provider, made, agent_span = premade_tool_spans(spans)
    barrier = threading.Barrier(1)
    config = LoopGuardConfig()

    def plain(_: None) -> None:
        agent(TracerProvider(), 0, spans, barrier)

    def guarded(detectors: list[Any] | None) -> Callable[[], LoopGuardSpanProcessor]:
        return lambda: processor_in_agent(provider, agent_span, config, detectors)

    def on_end(processor: LoopGuardSpanProcessor) -> None:
        for span in made:
            processor.on_end(span)

    def on_start(processor: LoopGuardSpanProcessor) -> None:
        for span in made:  # tool spans inside their agent span, as an instrumentation makes them
            processor.on_start(span)  # type: ignore[arg-type]

    # the events the processor feeds, made once: the monitor's own share without detectors
    # (counters, run table, pairing results with calls) is timed apart from the mapping
    fed = [
        span_to_events(view, view.trace_id, config)
        for view in (from_readable_span(span, detection_only=True) for span in made)
    ]

    def monitor_alone(monitor: Monitor) -> None:
        for events in fed:
            for event in events:
                monitor.observe(event)

    def view(_: None) -> None:
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

    def signatures(_: None) -> None:
        for arguments, result in pairs:
            call_signature("search", arguments)
            output_signature(result)

    def floor(_: None) -> None:
        blake2b = hashlib.blake2b
        for span in made:
            attrs = span_attributes(span)
            attrs.get("gen_ai.operation.name")
            attrs.get("gen_ai.tool.name")
            blake2b(attrs["gen_ai.tool.call.arguments"].encode(), digest_size=8).hexdigest()
            blake2b(attrs["gen_ai.tool.call.result"].encode(), digest_size=8).hexdigest()

    count = len(made)
    return {
        "plain": _block_cpu(plain, count),
        "on_start": _block_cpu(on_start, count, setup=guarded(None)),
        "on_end": _block_cpu(on_end, count, setup=guarded(None)),
        "monitor_alone": _block_cpu(
            monitor_alone, count, setup=lambda: Monitor(config, detectors=[])
        ),
        "no_detectors": _block_cpu(on_end, count, setup=guarded([])),
        "view": _block_cpu(view, count),
        "signatures": _block_cpu(signatures, count),
        "floor": _block_cpu(floor, count),
    }


def instruction_child(setup: str, spans: int, workload: str = "tool") -> None:
    """What ``--instructions`` counts: a warmed-up set-up, then ``spans`` spans of a workload."""
    provider = make_provider(setup)
    barrier = threading.Barrier(1)
    target = WORKLOADS[workload]
    target(provider, 0, 200, barrier)  # imports, caches, the run's tables
    provider.force_flush()
    if spans:
        target(provider, 0, spans, barrier)
        provider.force_flush()
    provider.shutdown()


def _collected(setup: str, spans: int, workload: str = "tool") -> int:
    """Instructions callgrind counted for :func:`instruction_child` (whole process)."""
    return collected(__file__, "--child", setup, str(spans), workload)


def instructions(spans: int, repeat: int = 3) -> int:
    if shutil.which("valgrind") is None:
        print("--instructions needs valgrind (apt-get install valgrind)", file=sys.stderr)
        return 2
    print(f"otel-loopguard build: {'compiled (mypyc)' if COMPILED else 'pure Python'}")
    print(f"instructions per span (callgrind; {spans} spans minus none, 1 thread)")
    print(f"(median of {repeat} runs each: the batch processor's thread makes counts vary ~2 %)")
    setups = {"tool": SETUPS, "web": ("plain", "loopguard")}
    jobs = [(s, n, w) for w, names in setups.items() for s in names for n in (spans, 0)]
    runs = [job for job in jobs for _ in range(repeat)]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:  # one process each
        counted = list(pool.map(lambda job: _collected(*job), runs))
    collected = {
        job: statistics.median(counted[index * repeat : (index + 1) * repeat])
        for index, job in enumerate(jobs)
    }
    titles = {
        "tool": "execute_tool span in an invoke_agent span",
        "web": "not GenAI: HTTP server span + 3 database client spans (per span)",
    }
    for workload, names in setups.items():
        print(f"{titles[workload]}")
        counts = {
            s: int(collected[s, spans, workload] - collected[s, 0, workload]) // spans
            for s in names
        }
        plain = counts["plain"]
        for setup in names:
            added = "" if setup == "plain" else f"  (+{counts[setup] - plain:,} ours)"
            print(f"  {setup:<14}{counts[setup]:>10,}{counts[setup] / plain:>8.2f}x{added}")
    return 0


def main() -> int:
    if sys.argv[1:2] == ["--child"]:
        instruction_child(sys.argv[2], int(sys.argv[3]), *sys.argv[4:5])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=2_000, help="tool spans per thread per round")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument(
        "--repeat", type=int, default=3, help="--instructions: runs per count (median)"
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count instructions per tool span with callgrind instead of timing",
    )
    args = parser.parse_args()
    if args.instructions:
        return instructions(args.spans, max(args.repeat, 1))
    print(f"otel-loopguard build: {'compiled (mypyc)' if COMPILED else 'pure Python'}")
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
    print(
        "\nspans that are not GenAI (HTTP server span + 3 database client spans); the control"
        " is a second plain SDK: its ratio is the noise"
    )
    print(
        "".join(
            f"{h:>16}" for h in ("threads", "plain SDK", "loopguard", "ratio", "control", "ratio")
        )
    )
    for threads in (1, args.threads):
        setups = ("plain", "loopguard", "plain-control")
        result = compare(threads, args.spans, args.rounds, "web", setups)
        plain_cpu, guard_cpu, control_cpu = (result[s][0] for s in setups)
        ok = ok and guard_cpu / plain_cpu <= WEB_TARGET_RATIO
        print(
            f"{threads:>16}{plain_cpu * 1e6:>16.1f}{guard_cpu * 1e6:>16.1f}"
            f"{guard_cpu / plain_cpu:>16.2f}{control_cpu * 1e6:>16.1f}"
            f"{control_cpu / plain_cpu:>16.2f}"
        )
    parts = breakdown()
    plain = parts["plain"]
    detectors = parts["on_end"] - parts["no_detectors"]
    mapping = parts["no_detectors"] - parts["view"] - parts["signatures"] - parts["monitor_alone"]
    print(
        "\nwhere a tool span's hooks go (pre-made spans, thread CPU time, µs per span; "
        "share of a plain SDK span without the batch processor)"
    )
    rows = [
        ("plain SDK span (no processors)", plain),
        ("loopguard on_start (tool span)", parts["on_start"]),
        ("loopguard on_end, all of it", parts["on_end"]),
        ("  span view + class", parts["view"]),
        ("  call + output signatures", parts["signatures"]),
        ("  events, run identity, bookkeeping", mapping),
        ("  monitor without detectors", parts["monitor_alone"]),
        ("  detectors + policy", detectors),
        ("floor: 4 attribute reads + 2 hashes", parts["floor"]),
    ]
    for label, seconds in rows:
        print(f"  {label:<40}{seconds * 1e6:>8.1f}{seconds / plain:>8.2f}")
    print(
        f"tool ratio <= {TARGET_RATIO}, not-GenAI ratio <= {WEB_TARGET_RATIO}: "
        f"{'PASS' if ok else 'FAIL'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
