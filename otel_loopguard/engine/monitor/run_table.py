"""The run table: live runs by id, in last-touched (LRU) order, bounded and swept.

A global lock guards only the table (get / create / LRU touch / evict, all O(1)); each run
has its own lock for the detector and policy work. At most ``max_runs`` live runs (least
recently used evicted first); runs idle for ``ttl`` seconds are dropped. The table is kept
in last-touched order, so idle runs are always at its front and a sweep looks at a few
entries per call. An evicted run's later events start a fresh run.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from otel_loopguard.engine.monitor.run_state import RunState

#: Creating a run sweeps up to SWEEP_ON_CREATE idle runs and every (SWEEP_EVERY + 1)-th
#: touch up to SWEEP_EVERY + 1: amortized O(1) per event, a short pause, and idle runs
#: never pile up faster than they are dropped.
SWEEP_ON_CREATE = 4
SWEEP_EVERY = 63


class RunTable:
    """Live runs (module docstring). ``new_states()`` makes a new run's detector states."""

    __slots__ = ("evicted", "lock", "max_runs", "new_states", "newest", "runs", "touches", "ttl")

    def __init__(self, max_runs: int, ttl: float, new_states: Callable[[], list[Any]]) -> None:
        self.runs: OrderedDict[str, RunState] = OrderedDict()
        self.newest: RunState | None = None  # the last run in LRU order
        self.touches = 0
        self.lock = threading.Lock()
        self.max_runs = max_runs
        self.ttl = ttl
        self.evicted = 0
        self.new_states = new_states

    def touch(self, run_id: str, now: float) -> RunState:
        """Get or create the run and mark it most recently used; sweep a few idle runs."""
        runs = self.runs
        newest = self.newest
        if newest is not None and newest.run_id == run_id and now - newest.last_seen <= self.ttl:
            # the same run as the last event (one agent at a time): it is already last in
            # LRU order, so the table lock is not needed; a racing eviction is harmless
            # (the event counts in the run object it found, as if it came just before).
            # ``Monitor.observe_fresh`` inlines this path.
            newest.last_seen = now
            self.touches += 1
            if not self.touches & SWEEP_EVERY:
                with self.lock:
                    self.sweep(now, SWEEP_EVERY + 1)
            return newest
        lock = self.lock
        lock.acquire()
        try:
            run = runs.get(run_id)
            if run is not None and now - run.last_seen <= self.ttl:
                if run is not self.newest:  # already last in LRU order: nothing to move
                    runs.move_to_end(run_id)
                    self.newest = run
                run.last_seen = now
                self.touches += 1
                if not self.touches & SWEEP_EVERY:
                    self.sweep(now, SWEEP_EVERY + 1)
                return run
            if run is not None:  # idle past the TTL: its events start a fresh run
                del runs[run_id]
                self.evicted += 1
            self.sweep(now, SWEEP_ON_CREATE)
            run = RunState(run_id, now, self.new_states())
            self.insert(run_id, run, now)
            return run
        finally:
            lock.release()

    def insert(self, run_id: str, run: RunState, now: float) -> None:
        """Add a run under the table lock, evicting the least recently used over the cap."""
        run.last_seen = now
        self.runs[run_id] = run
        self.newest = run
        while len(self.runs) > self.max_runs:
            self.runs.popitem(last=False)
            self.evicted += 1

    def sweep(self, now: float, limit: int | None) -> None:
        """Drop runs idle past the TTL, oldest first (the table is in last-touched order)."""
        runs = self.runs
        deadline = now - self.ttl
        dropped = 0
        while runs and (limit is None or dropped < limit):
            oldest = next(iter(runs.values()))
            if oldest.last_seen >= deadline:
                break
            if runs.popitem(last=False)[1] is self.newest:
                self.newest = None
            self.evicted += 1
            dropped += 1

    def get(self, run_id: str) -> RunState | None:
        """The run, without touching its LRU position."""
        with self.lock:
            return self.runs.get(run_id)

    def pop(self, run_id: str) -> RunState | None:
        """Take the run out of the table (``None`` for an unknown run)."""
        with self.lock:
            run = self.runs.pop(run_id, None)
            if run is not None and run is self.newest:
                self.newest = None
        return run

    def replace(self, run_id: str, run: RunState, now: float) -> None:
        """Put ``run`` in place of a live run of the same id (a restored run)."""
        with self.lock:
            self.runs.pop(run_id, None)
            self.insert(run_id, run, now)

    def live(self, now: float) -> int:
        """Live runs, after dropping those idle past the TTL."""
        with self.lock:
            self.sweep(now, limit=None)
            return len(self.runs)
