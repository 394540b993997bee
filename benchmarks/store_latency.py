"""What the shared run store adds to a tool call: the gate with the memory store (the
default) and with Redis on loopback, 1 and 8 threads, side by side in one run.

Usage::

    python benchmarks/store_latency.py             # 4000 calls per thread count
    python benchmarks/store_latency.py --calls 500 # a quick run

Starts its own ``redis-server`` (Debian's package) on a free loopback port, no
persistence, and stops it at the end. Each thread runs its own conversation (a run shared
through the store) through ``guard.tool_call`` on a real SDK ``TracerProvider`` (no
exporter), every call with new arguments so nothing stops. Per call it times the whole
gate (span, pre-flight, the store round trip, observing the call and its result) in wall
time, since the store's cost is waiting for the network. Printed: median and p99 per call
for each store, the run's wall time per call (with 8 threads on a GIL a call waiting for
the network lets the others run, so its own latency includes their work: the wall time
per call is what the store costs the process), the differences, the latency the store
adds (target: <= 0.2 ms median on loopback), and the store's bare gate round trip.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.append(str(HERE.parent))
sys.path.append(str(HERE.parent / "testing" / "otel-loopguard-testing" / "src"))

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from otel_loopguard_testing.redis_server import RedisServer  # noqa: E402

from otel_loopguard import LoopGuard, LoopGuardConfig  # noqa: E402
from otel_loopguard.engine.store import CounterDelta  # noqa: E402
from otel_loopguard.engine.store.redis import RedisStore  # noqa: E402

TARGET_MS = 0.2


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def gate_latencies(store: str, threads: int, calls: int) -> tuple[list[float], float]:
    """Seconds per gated tool call (every thread's calls together), and the run's wall
    time divided by its calls (what a call costs the process when threads share it)."""
    guard = LoopGuard(LoopGuardConfig(store=store, store_timeout=1000, max_runs=100_000))
    tracer = TracerProvider().get_tracer("store-latency")
    samples: list[list[float]] = [[] for _ in range(threads)]
    start = threading.Barrier(threads)
    tag = f"{store[:5]}-{threads}-{time.monotonic_ns()}"

    def worker(index: int) -> None:
        own = samples[index]
        start.wait()
        with guard.agent_run(tracer, "bench", conversation_id=f"{tag}-{index}"):
            for n in range(calls // threads):
                began = time.perf_counter()
                with guard.tool_call(tracer, "lookup", {"q": n, "t": index}) as call:
                    call.set_result(n)
                own.append(time.perf_counter() - began)

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    began = time.perf_counter()
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    elapsed = time.perf_counter() - began
    if guard.shared_runs is not None:
        guard.shared_runs.close()
    made = sum(len(own) for own in samples)
    return [s for own in samples for s in own[5:]], elapsed / made  # first calls warm up


def bare_gate(url: str, calls: int) -> list[float]:
    store = RedisStore(url, timeout_ms=1000)
    delta = CounterDelta(tool_calls=1)
    samples = []
    for _ in range(calls):
        began = time.perf_counter()
        store.gate("bare", delta, time.time())
        samples.append(time.perf_counter() - began)
    store.close()
    return samples[5:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=4000, help="tool calls per thread count")
    args = parser.parse_args()
    if shutil.which("redis-server") is None:
        print("redis-server not found (apt-get install redis-server)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="loopguard-bench-redis-") as directory:
        server = RedisServer(Path(directory))
        server.start()
        try:
            print(
                f"{'threads':>7}  {'store':<14}{'median ms':>10}{'p99 ms':>10}{'wall/call ms':>14}"
            )
            for threads in (1, 8):
                memory, memory_wall = gate_latencies("memory", threads, args.calls)
                redis, redis_wall = gate_latencies(server.url, threads, args.calls)
                for name, samples, wall in (
                    ("memory", memory, memory_wall),
                    ("redis loopback", redis, redis_wall),
                ):
                    print(
                        f"{threads:>7}  {name:<14}{statistics.median(samples) * 1e3:>10.3f}"
                        f"{percentile(samples, 0.99) * 1e3:>10.3f}{wall * 1e3:>14.3f}"
                    )
                added = (statistics.median(redis) - statistics.median(memory)) * 1e3
                added_p99 = (percentile(redis, 0.99) - percentile(memory, 0.99)) * 1e3
                added_wall = (redis_wall - memory_wall) * 1e3
                ok = "ok" if added <= TARGET_MS else "over target"
                print(
                    f"{threads:>7}  {'added by Redis':<14}{added:>10.3f}{added_p99:>10.3f}"
                    f"{added_wall:>14.3f}   (target median <= {TARGET_MS} ms: {ok})"
                )
            bare = bare_gate(server.url, args.calls)
            print(
                f"{1:>7}  {'gate script':<14}{statistics.median(bare) * 1e3:>10.3f}"
                f"{percentile(bare, 0.99) * 1e3:>10.3f}   (the store's round trip alone)"
            )
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
