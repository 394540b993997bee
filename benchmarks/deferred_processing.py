"""Would processing ended spans in batches meet issue 3's 1.5x? A rejected design, measured.

``docs/benchmarks.md`` ("Why CPU time moves less than instructions") found that our per-span
code misses the instruction cache about twice as often per instruction as the SDK's, because
one span's work runs through many small functions between two SDK spans. A processor that
only queues each ended span and processes the queue ``N`` at a time keeps that code warm
across ``N`` spans. This script measures what that would buy, on ``span_overhead.py``'s
tool workload and yardstick (CPU time of the process, plain SDK with a dropping batch
exporter as the baseline, rounds interleaved): set-ups ``plain``, ``loopguard`` (as
shipped) and ``deferred`` (the shipped processor's ``on_end`` run over each batch of ``N``).

It is not shipped because the gain is small (about 15 % of our cost, see the doc) and it
moves decisions: a decision made ``N`` spans late misses the run's agent span when that
span ended in between (the SDK gives a processor no hook before a span's end time is set),
and the gate would have to drain the queue before every veto.

Run: ``python benchmarks/deferred_processing.py [--batch N] [--spans S] [--rounds R]``.
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.guard import LoopGuard
from otel_loopguard.processor import LoopGuardSpanProcessor

sys.path.insert(0, str(Path(__file__).resolve().parent))
import span_overhead  # a sibling script, not a package


class DeferredProcessor(LoopGuardSpanProcessor):
    """The shipped processor, with ``on_end`` deferred to batches of ``batch`` spans."""

    def __init__(self, guard: LoopGuard, batch: int) -> None:
        super().__init__(guard)
        self.batch = batch
        self._pending: list[ReadableSpan] = []
        self._lock = threading.Lock()

    def on_end(self, span: ReadableSpan) -> None:
        self._pending.append(span)
        if len(self._pending) >= self.batch:
            self._drain()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        self._drain()
        return True

    def _drain(self) -> None:
        with self._lock:
            spans, self._pending = self._pending, []
        process = LoopGuardSpanProcessor.on_end
        for span in spans:
            process(self, span)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64, help="spans processed together")
    parser.add_argument("--spans", type=int, default=2_000, help="tool spans per thread")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args()

    shipped = span_overhead.make_provider

    def make_provider(setup: str) -> TracerProvider:
        if setup != "deferred":
            return shipped(setup)
        provider = TracerProvider()
        guard = LoopGuard(LoopGuardConfig(), tracer_provider=provider)
        provider.add_span_processor(DeferredProcessor(guard, args.batch))
        exporter = span_overhead.DropExporter()
        provider.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=65_536))
        return provider

    span_overhead.make_provider = make_provider
    setups = ("plain", "loopguard", "deferred")
    print(f"µs per tool span (CPU time of the process), median of {args.rounds} rounds, ", end="")
    print(f"deferred = processed {args.batch} at a time")
    print("".join(f"{h:>14}" for h in ("threads", *setups, "shipped", "deferred")))
    for threads in (1, args.threads):
        result = span_overhead.compare(threads, args.spans, args.rounds, setups=setups)
        plain = result["plain"][0]
        cells = [f"{result[s][0] * 1e6:.1f}" for s in setups]
        ratios = [f"{result[s][0] / plain:.2f}x" for s in ("loopguard", "deferred")]
        print("".join(f"{c:>14}" for c in (str(threads), *cells, *ratios)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
