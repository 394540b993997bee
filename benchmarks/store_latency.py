"""What the shared run store adds to a tool call: the gate with the memory store (the
default) and with Redis on loopback, 1 and 8 threads, side by side in one run.

Usage::

    python benchmarks/store_latency.py             # 4000 calls per row of instant tools
    python benchmarks/store_latency.py --calls 800 # a quick run

Starts its own ``redis-server`` (Debian's package) on a free loopback port, no
persistence, and stops it at the end. Each thread runs its own conversation (a run shared
through the store) through ``guard.tool_call`` on a real SDK ``TracerProvider`` (no
exporter), every call with new arguments so nothing stops. Per call it times the gate in
wall time (the store's cost is waiting for the network): entering the ``with`` block (span,
pre-flight, the store round trip) and leaving it (observing the call and its result), not
the tool's own work in between. Four rows, each with the memory store, then Redis:

- ``1 thread, tools instant``: one agent calling tools back to back;
- ``1 thread, tools wait``: one agent whose tools each wait 0.5-1.5 times ``--tool-ms``
  (10) on I/O, as a real tool does (an HTTP API, a subprocess; less than a model call);
- ``8 threads, tools wait``: eight such agents in one process. Compared with the row above
  it shows whether threads wait for each other in the store (they do not);
- ``8 threads, tools instant``: eight threads doing nothing but gated calls, the GIL always
  busy. Every call that waits for the network hands the GIL to the other seven and waits
  for their work before it goes on, while a memory-store call never lets go of the GIL: the
  median there is queueing for the GIL, not the store, and the run's wall time per call is
  what the store costs the process.

Printed per row: median and p99 per call for each store, the run's wall time per call, and
the differences (target: <= 0.2 ms median added on loopback, judged on the first three
rows). Then one round trip alone: the store's gate script and a plain ``PING`` on a raw
socket, warm and after a tool's wait. On a virtual machine a round trip after an idle
spell includes waking the process and the server (hundreds of microseconds where halted
virtual CPUs are woken by the hypervisor): the ``PING`` lines show that floor, which no
client can go under.

``--instructions`` instead counts, with ``valgrind --tool=callgrind``, the instructions a
gated tool call costs with each store: this script re-run as a child with 1,200 and with
200 calls through ``guard.agent_run`` and ``guard.tool_call``, the difference divided by
1,000. Counts do not move with the machine's load, so two commits compare exactly.
"""

from __future__ import annotations

import argparse
import random
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.append(str(HERE.parent))
sys.path.append(str(HERE.parent / "testing" / "otel-loopguard-testing" / "src"))

from callgrind import collected  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from otel_loopguard_testing.redis_server import RedisServer  # noqa: E402

from otel_loopguard import LoopGuard, LoopGuardConfig  # noqa: E402
from otel_loopguard.engine.store import CounterDelta  # noqa: E402
from otel_loopguard.engine.store.redis import RedisStore  # noqa: E402

TARGET_MS = 0.2


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def gate_latencies(
    store: str, threads: int, calls: int, tool_seconds: float = 0.0
) -> tuple[list[float], float]:
    """Seconds in the gate per tool call (every thread's calls together), and the run's
    wall time divided by its calls (what a call costs the process when threads share it)."""
    guard = LoopGuard(LoopGuardConfig(store=store, store_timeout=1000, max_runs=100_000))
    tracer = TracerProvider().get_tracer("store-latency")
    samples: list[list[float]] = [[] for _ in range(threads)]
    start = threading.Barrier(threads)
    tag = f"{store[:5]}-{threads}-{time.monotonic_ns()}"

    def worker(index: int) -> None:
        own = samples[index]
        # each tool's wait varies (seeded): agents in lockstep would all reach the gate at
        # the same moment, on every call, which real agents' model and tool times never do
        waits = random.Random(index)
        start.wait()
        with guard.agent_run(tracer, "bench", conversation_id=f"{tag}-{index}"):
            for n in range(calls // threads):
                began = time.perf_counter()
                with guard.tool_call(tracer, "lookup", {"q": n, "t": index}) as call:
                    entered = time.perf_counter()
                    if tool_seconds:  # the tool's I/O: the GIL is free meanwhile
                        time.sleep(tool_seconds * waits.uniform(0.5, 1.5))
                    call.set_result(n)
                    leaving = time.perf_counter()
                own.append(entered - began + time.perf_counter() - leaving)

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


def bare_gate(url: str, calls: int, idle: float = 0.0) -> list[float]:
    """The store's gate script alone, each call after ``idle`` seconds of nothing."""
    store = RedisStore(url, timeout_ms=1000)
    delta = CounterDelta(tool_calls=1)
    samples = []
    for _ in range(calls):
        if idle:
            time.sleep(idle)
        began = time.perf_counter()
        store.gate("bare", delta, time.time())
        samples.append(time.perf_counter() - began)
    store.close()
    return samples[5:]


def raw_ping(port: int, calls: int, idle: float = 0.0) -> list[float]:
    """``PING`` on a plain socket, no client library: the machine's loopback round trip to
    the server, the floor under any store call."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        samples = []
        for _ in range(calls):
            if idle:
                time.sleep(idle)
            began = time.perf_counter()
            sock.sendall(b"*1\r\n$4\r\nPING\r\n")
            sock.recv(16)
            samples.append(time.perf_counter() - began)
    return samples[5:]


def instruction_child(store: str, calls: int) -> None:
    """What ``--instructions`` counts: ``calls`` gated tool calls in one agent run."""
    guard = LoopGuard(LoopGuardConfig(store=store, store_timeout=1000, max_runs=100_000))
    tracer = TracerProvider().get_tracer("store-latency")
    with guard.agent_run(tracer, "bench", conversation_id=f"count-{time.monotonic_ns()}"):
        for n in range(calls):
            with guard.tool_call(tracer, "lookup", {"q": n}) as call:
                call.set_result(n)
    if guard.shared_runs is not None:
        guard.shared_runs.close()


def _count(store: str, calls: int) -> int:
    return collected(__file__, "--child", store, str(calls))


def instructions(url: str) -> None:
    print("instructions per gated tool call (callgrind; 1,200 calls minus 200, 1 thread)")
    counts = {}
    for name, store in (("memory", "memory"), ("redis loopback", url)):
        counts[name] = (_count(store, 1200) - _count(store, 200)) / 1000
        print(f"  {name:<16}{counts[name]:>12,.0f}")
    added = counts["redis loopback"] - counts["memory"]
    share = added / counts["memory"]
    print(f"  {'added by Redis':<16}{added:>12,.0f}   ({share:.2f}x the memory store's call)")


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        instruction_child(sys.argv[2], int(sys.argv[3]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--calls", type=int, default=4000, help="tool calls per row of instant tools"
    )
    parser.add_argument(
        "--tool-ms", type=float, default=10.0, help="each tool's I/O wait where tools wait"
    )
    parser.add_argument(
        "--instructions", action="store_true", help="count instructions with callgrind instead"
    )
    args = parser.parse_args()
    if shutil.which("redis-server") is None:
        print("redis-server not found (apt-get install redis-server)", file=sys.stderr)
        return 2
    if args.instructions and shutil.which("valgrind") is None:
        print("--instructions needs valgrind (apt-get install valgrind)", file=sys.stderr)
        return 2
    if args.instructions:
        with tempfile.TemporaryDirectory(prefix="loopguard-bench-redis-") as directory:
            server = RedisServer(Path(directory))
            server.start()
            try:
                instructions(server.url)
            finally:
                server.stop()
        return 0
    wait = args.tool_ms / 1000
    waiting = max(80, args.calls // 8)  # calls of the rows whose tools wait: seconds each
    rows = (
        ("1 thread, tools instant", 1, 0.0, args.calls, True),
        (f"1 thread, tools wait {args.tool_ms:g} ms", 1, wait, waiting, True),
        (f"8 threads, tools wait {args.tool_ms:g} ms", 8, wait, waiting * 8, True),
        ("8 threads, tools instant (GIL-bound)", 8, 0.0, args.calls, False),
    )
    with tempfile.TemporaryDirectory(prefix="loopguard-bench-redis-") as directory:
        server = RedisServer(Path(directory))
        server.start()
        try:
            print(f"{'':<2}{'store':<16}{'median ms':>10}{'p99 ms':>10}{'wall/call ms':>14}")
            for title, threads, tool_seconds, calls, judged in rows:
                print(title)
                memory, memory_wall = gate_latencies("memory", threads, calls, tool_seconds)
                redis, redis_wall = gate_latencies(server.url, threads, calls, tool_seconds)
                for name, samples, wall in (
                    ("memory", memory, memory_wall),
                    ("redis loopback", redis, redis_wall),
                ):
                    print(
                        f"  {name:<16}{statistics.median(samples) * 1e3:>10.3f}"
                        f"{percentile(samples, 0.99) * 1e3:>10.3f}{wall * 1e3:>14.3f}"
                    )
                added = (statistics.median(redis) - statistics.median(memory)) * 1e3
                added_p99 = (percentile(redis, 0.99) - percentile(memory, 0.99)) * 1e3
                added_wall = (redis_wall - memory_wall) * 1e3
                if judged:
                    ok = "ok" if added <= TARGET_MS else "over target"
                    verdict = f"(target median <= {TARGET_MS} ms: {ok})"
                else:
                    verdict = "(the median is GIL queueing; wall/call is the store's cost)"
                print(
                    f"  {'added by Redis':<16}{added:>10.3f}{added_p99:>10.3f}"
                    f"{added_wall:>14.3f}   {verdict}"
                )
            print("one round trip alone, 1 thread: warm, then after each tool's wait")
            idle_calls = max(50, args.calls // 20)
            for name, samples in (
                ("gate script", bare_gate(server.url, args.calls)),
                ("gate, after wait", bare_gate(server.url, idle_calls, wait)),
                ("raw PING", raw_ping(server.port, args.calls)),
                ("PING, after wait", raw_ping(server.port, idle_calls, wait)),
            ):
                print(
                    f"  {name:<16}{statistics.median(samples) * 1e3:>10.3f}"
                    f"{percentile(samples, 0.99) * 1e3:>10.3f}"
                )
            print(
                "  (a round trip after the process sat idle includes waking it and the server,"
                " the machine's cost: compare the PING lines)"
            )
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
