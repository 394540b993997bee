"""Throughput and memory of the monitor with every default detector.

Usage::

    python benchmarks/monitor_throughput.py [--events N] [--runs R] [--pairs P]

Prints, for a realistic event mix (an agent's model turns asking for one or two tool
calls, their results, some repeated calls and outputs, errors, handoffs):

1. events/s through ``Monitor.observe`` on ONE run of N events (default 1,000,000), and on
   R (default 10,000) interleaved runs sharing N events;
2. the per-event cost at 1,000 events (events 1,001-2,000 of a fresh run) and after the
   N-event run, timed in alternating pairs so both see the same machine load, and their
   ratio: it must stay ≤ 1.2, i.e. the cost of an event does not grow with the run;
3. memory per active run after the N-event run and with R runs: the bytes of every object
   the run holds (object graph, ``sys.getsizeof``), cross-checked against ``tracemalloc``
   on a shorter run (tracing a million events would take minutes);
4. a baseline measured in the same process: the same loop building the same events and
   doing a dict lookup per event, block by block right after the monitor's block, so the
   monitor's own cost is the difference and the figures are also ratios (the machine this
   runs on may be shared and slow; ratios travel better than absolute numbers).

Timings are CPU time of the benchmark thread (``time.thread_time``), so the time spent
waiting for a core while neighbours run is not counted, and each figure is the median over
blocks of 1,000 events, so a burst of cache pressure moves a few blocks, not the figure.
The wall-clock rate over the whole run is printed as well.

The benchmark uses the ``observe`` policy (the ``default`` verdict capped at ``warn``) so
that the run is never stopped: a stopped run skips its detectors, which would make the
figures meaningless. Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import enum
import gc
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

# the source tree as a fallback only: an installed (perhaps compiled) package comes first
sys.path.append(str(Path(__file__).resolve().parent.parent))

from otel_loopguard import COMPILED
from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.events import ErrorInfo, Event, EventKind
from otel_loopguard.engine.monitor import Monitor

BLOCK = 1_000
#: CPU time of this thread: on a shared machine, time spent descheduled while neighbours
#: run is not the monitor's cost (wall-clock rates are printed too)
CLOCK = getattr(time, "thread_time", time.process_time)
SCRIPT_LENGTH = 1 << 16  # distinct event specs, cycled
TARGET_EVENTS_PER_SECOND = 100_000
TARGET_GROWTH_RATIO = 1.2
TARGET_BYTES_PER_RUN = 16 * 1024

TOOLS = (
    "search",
    "read_file",
    "grep",
    "bash",
    "write_file",
    "fetch_url",
    "run_tests",
    "list_directory",
)
ERRORS = (
    ErrorInfo("TimeoutError", "read timed out", None),
    ErrorInfo("HTTPError", "404 Not Found", 404),
    ErrorInfo("HTTPError", "429 Too Many Requests", 429),
    ErrorInfo("PermissionError", "permission denied", None),
)
Spec = tuple[Any, ...]  # the positional Event fields after run_id


def _signatures() -> tuple[Callable[..., tuple[str, str]], Callable[..., tuple[str, str]]]:
    """The real signature functions when they are installed, else a stand-in of equal shape."""
    try:
        from otel_loopguard.engine.signatures import call_signature, output_signature
    except ImportError:  # the signatures module lands with the detectors

        def call_signature(tool: str, arguments: Any, max_chars: int = 200) -> tuple[str, str]:
            return f"{hash((tool, str(arguments))) & (2**64 - 1):016x}", tool

        def output_signature(output: Any, max_chars: int = 200) -> tuple[str, str]:
            return f"{hash(str(output)) & (2**64 - 1):016x}", str(output)[:20]

    return call_signature, output_signature


def _tool_spec(
    kind: EventKind, actor: str, tool: str, exact: str, near: str, error: ErrorInfo | None = None
) -> Spec:
    # kind, actor, tool, signature, near, call_id, error, then the model and handoff fields
    return (kind, actor, tool, exact, near, None, error, None, None, None, None, False, None, None)


def build_script(seed: int = 7) -> list[Spec]:
    """A cyclic script of event specs: turns of 1 model response and 1-2 tool calls + results.

    About 15 % of calls repeat one of the last 8 calls; 10 % of outputs are the same "no
    results"; 4 % of calls fail; 1 % of turns hand off to another agent; 1 % of model
    responses are truncated.
    """
    call_signature, output_signature = _signatures()
    rng = random.Random(seed)
    script: list[Spec] = []
    recent: list[tuple[str, str, str]] = []
    agents = ("planner", "researcher", "coder")
    while len(script) < SCRIPT_LENGTH:
        actor = agents[rng.randrange(3)]
        calls = []
        for _ in range(1 + (rng.random() < 0.4)):
            if recent and rng.random() < 0.15:
                tool, exact, near = recent[rng.randrange(len(recent))]
            else:
                tool = TOOLS[rng.randrange(len(TOOLS))]
                exact, near = call_signature(tool, {"q": f"topic {rng.randrange(50_000)}"})
                recent = [*recent[-7:], (tool, exact, near)]
            calls.append((tool, exact, near))
        finish = "length" if rng.random() < 0.01 else "tool_calls"
        script.append(
            # kind, actor, tool, signature, near, call_id, error, model, finish, in, out,
            # empty, requested tool calls, target agent
            (
                EventKind.LLM_RESPONSE,
                actor,
                None,
                "",
                "",
                None,
                None,
                "gpt-4o",
                finish,
                rng.randrange(500, 2000),
                rng.randrange(20, 300),
                False,
                tuple(sorted(exact for _, exact, _ in calls)),
                None,
            )
        )
        for tool, exact, near in calls:
            script.append(_tool_spec(EventKind.TOOL_CALL, actor, tool, exact, near))
            roll = rng.random()
            if roll < 0.04:
                error = ERRORS[rng.randrange(len(ERRORS))]
                out, out_near = output_signature(f"{error.type}:{error.message}")
                script.append(_tool_spec(EventKind.TOOL_ERROR, actor, tool, out, out_near, error))
            else:
                text = "no results" if roll < 0.14 else f"result {rng.randrange(100_000)}"
                out, out_near = output_signature(text)
                script.append(_tool_spec(EventKind.TOOL_RESULT, actor, tool, out, out_near))
        if rng.random() < 0.01:
            target = agents[rng.randrange(3)]
            handoff = (EventKind.HANDOFF, actor, None, "", "", None, None, None, None, None)
            script.append((*handoff, None, False, None, target))
    return script[:SCRIPT_LENGTH]


def make_event(spec: Spec, run_id: str) -> Event:
    kind, actor, *rest = spec
    return Event(kind, run_id, actor, *rest)


def new_monitor() -> Monitor:
    return Monitor(LoopGuardConfig(policy="observe"))


def timed_blocks(
    script: list[Spec],
    events: int,
    run_ids: list[str],
    observe: Callable[[Event], Any],
    baseline: Callable[[Event], Any] | None = None,
) -> tuple[list[float], list[float]]:
    """Feed ``events`` events; CPU seconds per block of :data:`BLOCK` events.

    Event ``i`` goes to run ``i % len(run_ids)`` as that run's ``i // len(run_ids)``-th
    event, taken from the script at an offset per run, so every run sees a coherent agent.
    With ``baseline``, each block is fed to it right after the monitor (the same events
    built again), so both timings see the same machine load: (monitor blocks, baseline
    blocks).
    """
    mask = SCRIPT_LENGTH - 1
    runs = len(run_ids)
    offsets = [(n * 7919) & mask for n in range(runs)]
    clock = CLOCK

    def feed(first: int, sink: Callable[[Event], Any]) -> float:
        begin = clock()
        for index in range(first, first + BLOCK):
            run = index % runs
            kind, actor, *rest = script[(offsets[run] + index // runs) & mask]
            sink(Event(kind, run_ids[run], actor, *rest))
        return clock() - begin

    blocks: list[float] = []
    base_blocks: list[float] = []
    for first in range(0, events - events % BLOCK, BLOCK):
        blocks.append(feed(first, observe))
        if baseline is not None:
            base_blocks.append(feed(first, baseline))
    return blocks, base_blocks


def baseline_observe() -> Callable[[Event], Any]:
    table: dict[str, int] = {}

    def observe(event: Event) -> Any:
        return table.get(event.run_id)

    return observe


def median_per_event(blocks: list[float]) -> float:
    return statistics.median(blocks) / BLOCK


def block_cost(script: list[Spec], start: int, run_id: str, observe: Callable[..., Any]) -> float:
    """CPU seconds per event for one block of :data:`BLOCK` events from script ``start``."""
    mask = SCRIPT_LENGTH - 1
    begin = CLOCK()
    for position in range(start, start + BLOCK):
        kind, actor, *rest = script[position & mask]
        observe(Event(kind, run_id, actor, *rest))
    return (CLOCK() - begin) / BLOCK


def growth_pairs(
    script: list[Spec], old: Monitor, old_run: str, old_position: int, pairs: int
) -> tuple[float, float]:
    """Per-event cost at 1,000 events (a fresh run) and in the old run, measured in turns.

    Each pair times events 1,001-2,000 of a new run and then 1,000 more events of the long
    run right after, so both see the same machine load; medians of the pairs.
    """
    young_costs, old_costs = [], []
    rng = random.Random(11)
    for pair in range(pairs):
        young = new_monitor()
        start = rng.randrange(SCRIPT_LENGTH)
        block_cost(script, start, "young", young.observe)  # its first 1,000 events
        young_costs.append(block_cost(script, start + BLOCK, "young", young.observe))
        old_costs.append(block_cost(script, old_position + pair * BLOCK, old_run, old.observe))
    return statistics.median(young_costs), statistics.median(old_costs)


_SHARED_TYPES = (type, type(sys), type(len), type(lambda: None), enum.Enum)


def retained_bytes(root: object, exclude: set[int]) -> int:
    """Bytes of every object reachable from ``root`` (``sys.getsizeof``, GC header included).

    Shared, process-wide objects (classes, modules, functions, enum members, the monitor's
    detectors and config) are not the run's and are skipped via ``exclude``.
    """
    seen = set(exclude)
    stack = [root]
    total = 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, _SHARED_TYPES):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        stack.extend(gc.get_referents(obj))
    return total


def shared_ids(monitor: Monitor) -> set[int]:
    ids = {id(monitor), id(monitor.config), id(None), id(True), id(False)}
    ids.update(id(detector) for detector in monitor.detectors)
    ids.update(id(n) for n in range(-5, 257))  # CPython's cached small ints
    return ids


def run_bytes(monitor: Monitor, run_id: str) -> int:
    return retained_bytes(monitor._runs[run_id], shared_ids(monitor))


def traced_bytes_per_run(script: list[Spec], events: int, runs: int) -> tuple[float, float]:
    """tracemalloc's count of what runs hold after ``events`` events over ``runs`` runs.

    Events are built with fresh signature strings (as spans would give them), so what a run
    keeps is allocated while tracing. Returns (tracemalloc bytes, object-graph bytes) per
    run, to show that the object-graph measure used for the 1M-event runs agrees.
    """
    gc.collect()
    tracemalloc.start()
    monitor = new_monitor()
    before = tracemalloc.get_traced_memory()[0]
    run_ids = [f"run-{n:05d}" for n in range(runs)]
    mask = SCRIPT_LENGTH - 1
    for index in range(events):
        run = index % runs
        kind, actor, tool, signature, near, *rest = script[(run * 7919 + index // runs) & mask]
        monitor.observe(
            Event(kind, run_ids[run], actor, tool, "".join(signature), "".join(near), *rest)
        )
    gc.collect()
    traced = (tracemalloc.get_traced_memory()[0] - before) / runs
    tracemalloc.stop()
    graph = statistics.mean(run_bytes(monitor, run_id) for run_id in run_ids)
    return traced, graph


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="events in the long run")
    parser.add_argument("--runs", type=int, default=10_000, help="interleaved runs")
    parser.add_argument("--pairs", type=int, default=30, help="young/old block pairs")
    parser.add_argument(
        "--traced-events", type=int, default=50_000, help="events of the tracemalloc check"
    )
    args = parser.parse_args(argv)
    print(f"otel-loopguard build: {'compiled (mypyc)' if COMPILED else 'pure Python'}")
    events = max(args.events, 30 * BLOCK)

    script = build_script()
    monitor = new_monitor()
    detectors = [d.name for d in monitor.detectors]
    print(f"python {sys.version.split()[0]}, {len(detectors)} detectors: {', '.join(detectors)}")
    print(
        f"event mix: {SCRIPT_LENGTH:,} scripted events cycled; policy 'observe' (never stops); "
        f"CPU time of this thread, medians of {BLOCK:,}-event blocks"
    )

    # 1. one long run (each block also fed to the baseline right after it)
    started = time.perf_counter()
    long_blocks, base_blocks = timed_blocks(
        script, events, ["long-run"], monitor.observe, baseline_observe()
    )
    long_wall = time.perf_counter() - started
    base = median_per_event(base_blocks)
    snapshot = monitor.run_snapshot("long-run")
    assert snapshot is not None and not snapshot.stopped
    assert snapshot.counters.events == events, "events were lost"
    long_cost = median_per_event(long_blocks)
    long_bytes = run_bytes(monitor, "long-run")

    # 2. per-event cost at 1,000 events vs after the long run, measured in turns
    early, late = growth_pairs(script, monitor, "long-run", events, args.pairs)
    growth = late / early

    # 3. many interleaved runs
    many = new_monitor()
    run_ids = [f"run-{n:05d}" for n in range(args.runs)]
    started = time.perf_counter()
    many_blocks, many_base_blocks = timed_blocks(
        script, events, run_ids, many.observe, baseline_observe()
    )
    many_wall = time.perf_counter() - started
    many_cost = median_per_event(many_blocks)
    many_base = median_per_event(many_base_blocks)
    assert many.active_runs == min(args.runs, many.config.max_runs)
    assert many.internal_errors == 0 and monitor.internal_errors == 0
    many_bytes = statistics.mean(run_bytes(many, run_id) for run_id in run_ids)

    def rate(cost: float, base: float) -> str:
        """Net (minus the baseline: the monitor alone) and gross (event built + observed)."""
        net = max(cost - base, 1e-12)
        return (
            f"{1 / net:>9,.0f} events/s through the monitor ({net * 1e6:5.2f} µs/event); "
            f"{1 / cost:>9,.0f} events/s with event building ({cost / base:4.1f}x the "
            f"baseline's {base * 1e6:.2f} µs: build the event + a dict lookup)"
        )

    print(f"1 run, {events:,} events: {rate(long_cost, base)}")
    print(f"   wall clock, whole run: {events / long_wall:,.0f} events/s with event building")
    print(f"{args.runs:,} interleaved runs, {events:,} events: {rate(many_cost, many_base)}")
    print(f"   wall clock, whole run: {events / many_wall:,.0f} events/s with event building")
    print(
        f"per-event cost at 1,000 events {early * 1e6:.2f} µs, after {events:,} events "
        f"{late * 1e6:.2f} µs: ratio {growth:.2f} (target ≤ {TARGET_GROWTH_RATIO}; "
        f"median of {args.pairs} interleaved pairs)"
    )
    print(
        f"long run: {snapshot.signals:,} signals raised, most severe decision "
        f"{snapshot.final_action.value}"
    )
    traced_one, graph_one = traced_bytes_per_run(script, args.traced_events, 1)
    traced_many, graph_many = traced_bytes_per_run(script, args.traced_events, 500)
    print(
        f"memory per active run: {long_bytes / 1024:.1f} KiB after {events:,} events in one "
        f"run; {many_bytes / 1024:.1f} KiB each with {args.runs:,} runs "
        f"(target ≤ {TARGET_BYTES_PER_RUN // 1024} KiB)"
    )
    print(
        f"   cross-check, tracemalloc vs object graph: {traced_one / 1024:.1f} / "
        f"{graph_one / 1024:.1f} KiB after {args.traced_events:,} events in one run, "
        f"{traced_many / 1024:.1f} / {graph_many / 1024:.1f} KiB each over 500 runs"
    )
    long_rate, many_rate = 1 / (long_cost - base), 1 / (many_cost - many_base)

    failed = []
    if min(long_rate, many_rate) < TARGET_EVENTS_PER_SECOND:
        failed.append(f"throughput < {TARGET_EVENTS_PER_SECOND:,} events/s")
    if growth > TARGET_GROWTH_RATIO:
        failed.append(f"cost growth {growth:.2f} > {TARGET_GROWTH_RATIO}")
    if max(long_bytes, many_bytes) > TARGET_BYTES_PER_RUN:
        failed.append("memory per run over target")
    print("targets met" if not failed else "MISSED: " + "; ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
