"""Cost of the budget and guard detectors, and of classifying huge shell outputs.

Usage::

    python benchmarks/guard_detectors.py [--events N]

Prints:

1. the per-event CPU cost of each of ``budget``, ``budget_proximity``, ``truncation``,
   ``premature_end``, ``read_only_loop`` and ``shell_failure`` (all limits on) on the
   events of a coding agent that reads, edits and runs shell commands (some failing), called
   as the monitor calls them (only for the event kinds each declares). A detector's own
   cost is its time minus that of the same loop alone (counters kept as the monitor keeps
   them); it is also shown as a multiple of a trivial detector that only counts and is
   called on every event, since ratios travel between machines better than microseconds;
2. that cost again after N events (default 200,000), as a ratio to the cost right after
   the start (target <= 1.2): state is bounded, so an event costs the same at event
   200,000. Both are measured from exported snapshots of the detector's state, in
   alternating trials of 5,000 events, best of 15 each, so load from neighbours on a
   shared machine hits both alike;
3. the cost of judging one shell result of 1 KB, 8 KB (the scanned cap), 1 MB and 10 MB
   whose error line sits at the end (a traceback), and the 10 MB / 8 KB ratio:
   classification reads a capped head and tail, so a 10 MB output must cost about what
   the cap costs (target <= 2).

Timings are CPU time of this thread (``time.thread_time``). Exit status 1 when a target
is missed.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent))  # installed package first

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.detectors import GUARD_DETECTORS
from otel_loopguard.engine.detectors.base import RunCounters
from otel_loopguard.engine.detectors.shell_failure import (
    classify_shell_failure,
)
from otel_loopguard.engine.events import ErrorInfo, Event, EventKind

CLOCK = getattr(time, "thread_time", time.process_time)
BLOCK = 1_000
TRIAL = 5_000  # events per timed trial
TRIALS = 15  # trials early and late, alternating; the best of each counts
TARGET_SIZE_RATIO = 2.0
TARGET_GROWTH_RATIO = 1.2
DETECTORS = GUARD_DETECTORS
TRACEBACK_END = "Traceback (most recent call last):\nModuleNotFoundError: No module named 'x'\n"


def agent_events() -> list[Event]:
    """One cycle of a coding agent: reads, an edit, shell runs (one failing), a truncation."""
    llm = EventKind.LLM_RESPONSE

    def turn(finish: str = "tool_calls", empty: bool = False) -> Event:
        return Event(llm, "run", model="m", finish_reason=finish, output_tokens=200, empty=empty)

    def call(tool: str) -> Event:
        return Event(EventKind.TOOL_CALL, "run", tool_name=tool)

    def result(tool: str, output: Any) -> Event:
        return Event(EventKind.TOOL_RESULT, "run", tool_name=tool, output=output)

    return [
        turn(),
        call("read_file"),
        result("read_file", "def main():\n    return 1\n" * 20),
        call("fs.grep"),
        result("fs.grep", "src/app.py:3: main()"),
        turn(),
        call("edit_file"),
        result("edit_file", "ok"),
        turn(),
        call("bash"),
        result("bash", "===== 12 passed in 0.31s =====\n"),
        turn("length"),
        call("bash"),
        result("bash", TRACEBACK_END),
        call("fetch"),
        Event(EventKind.TOOL_ERROR, "run", tool_name="fetch", error=ErrorInfo("HTTPError")),
        turn("stop", empty=True),
        turn("stop"),
    ]


def count(counters: RunCounters, event: Event, index: int) -> None:
    """What the monitor does before detectors see an event."""
    counters.events += 1
    counters.now = index * 1e-3
    if event.kind is EventKind.LLM_RESPONSE:
        counters.steps += 1
        counters.output_tokens += 200
        counters.cost = counters.output_tokens * 1e-6
    elif event.kind is EventKind.TOOL_CALL:
        counters.tool_calls += 1


def feed(detector: Any, state: Any, counters: RunCounters, start: int, n: int) -> float:
    """Feed events ``start .. start + n`` as the monitor would; CPU seconds taken."""
    kinds = getattr(detector, "event_kinds", None)
    observe = detector.observe
    events = EVENTS
    cycle = len(events)
    began = CLOCK()
    for index in range(start, start + n):
        event = events[index % cycle]
        count(counters, event, index)
        if kinds is None or event.kind in kinds:
            observe(event, state, counters)
    return CLOCK() - began


def snapshot(detector: Any, events_before: int) -> tuple[dict[str, Any], RunCounters]:
    """The detector's exported state and the counters after ``events_before`` events."""
    state = detector.new_state()
    counters = RunCounters(started_at=0.0)
    feed(detector, state, counters, 0, events_before)
    return detector.export_state(state), counters


def trial(detector: Any, saved: tuple[dict[str, Any], RunCounters], start: int) -> float:
    """CPU seconds per event for TRIAL events continuing from a snapshot."""
    state = detector.restore_state(saved[0])
    return feed(detector, state, replace(saved[1]), start, TRIAL) / TRIAL


def early_and_late(detector: Any, total: int) -> tuple[float, float]:
    """Per-event cost right after the start and after ``total`` events, measured in
    alternation (so load on a shared machine hits both alike); best of TRIALS each."""
    early, late = snapshot(detector, BLOCK), snapshot(detector, total)
    early_times, late_times = [], []
    for _ in range(TRIALS):
        early_times.append(trial(detector, early, BLOCK))
        late_times.append(trial(detector, late, total))
    return min(early_times), min(late_times)


class Trivial:
    """A detector that only counts: the unit the others are compared with."""

    name = "trivial"

    def __init__(self, event_kinds: frozenset[EventKind] | None = None) -> None:
        self.event_kinds = event_kinds

    def new_state(self) -> list[int]:
        return [0]

    def observe(self, event: Event, state: list[int], counters: RunCounters) -> None:
        state[0] += 1

    def export_state(self, state: list[int]) -> dict[str, Any]:
        return {"count": state[0]}

    def restore_state(self, data: dict[str, Any]) -> list[int]:
        return [data["count"]]


EVENTS = agent_events()


def classification_cost(size: int, repeats: int = 20) -> float:
    body = "x" * max(0, size - len(TRACEBACK_END))
    event = Event(EventKind.TOOL_RESULT, "run", tool_name="bash", output=body + TRACEBACK_END)
    assert classify_shell_failure(event) is not None  # found at the end of any size
    samples = []
    for _ in range(5):
        start = CLOCK()
        for _ in range(repeats):
            classify_shell_failure(event)
        samples.append((CLOCK() - start) / repeats)
    return min(samples)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    args = parser.parse_args(argv)
    total = max(args.events, 10 * TRIAL)
    config = LoopGuardConfig(
        max_steps=10**9, max_tool_calls=10**9, token_budget=10**12, cost_limit=1e9, timeout=1e9
    )
    missed: list[str] = []

    loop, _ = early_and_late(Trivial(frozenset()), total)  # never called: the loop alone
    unit = early_and_late(Trivial(), total)[0] - loop
    print(f"python {sys.version.split()[0]}; a coding agent's events; all limits on")
    print(f"the loop alone (counters kept as the monitor keeps them): {loop * 1e6:6.3f} µs/event")
    print(f"a trivial detector called on every event:               {unit * 1e6:6.3f} µs/event")
    overall = 0.0
    for factory in DETECTORS:
        detector = factory(config)
        early, late = early_and_late(detector, total)
        own = max(early - loop, 0.0)
        growth = (late - loop) / own if own > 0 else 1.0
        overall += own
        print(
            f"{detector.name:<17} {own * 1e6:6.3f} µs/event ({own / unit:4.1f}x the trivial "
            f"detector); after {total:,} events {growth:4.2f}x that"
        )
        if growth > TARGET_GROWTH_RATIO:
            missed.append(f"{detector.name} cost grows with run length ({growth:.2f})")
    print(f"all six           {overall * 1e6:6.3f} µs/event ({overall / unit:4.1f}x)")

    sizes = {"1 KB": 1_000, "8 KB": 8_000, "1 MB": 1_000_000, "10 MB": 10_000_000}
    costs = {label: classification_cost(size) for label, size in sizes.items()}
    line = ", ".join(f"{label} {cost * 1e6:.1f} µs" for label, cost in costs.items())
    ratio = costs["10 MB"] / costs["8 KB"]
    print(f"shell result with the error at its end: {line}; 10 MB / 8 KB = {ratio:.2f}x")
    if ratio > TARGET_SIZE_RATIO:
        missed.append(f"classification grows with output size ({ratio:.2f}x)")

    for reason in missed:
        print(f"MISSED: {reason}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
