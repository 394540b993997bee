"""The default store: everything in this process (``OTEL_LOOPGUARD_STORE=memory``).

What a single process had before stores existed; the guard does not even call it on its
hot path unless fleet budgets are set (then it keeps each user's rolling window here, for
this process's runs). Bounded: at most ``max_runs`` runs and users, oldest dropped, and
entries idle past the TTL are forgotten.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, ClassVar

from otel_loopguard.engine.store import base
from otel_loopguard.engine.store.window import UsageWindow


@dataclass
class _Run:
    started: float
    seen: float
    steps: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    cost_unknown: bool = False
    stop: base.StopRecord | None = None
    version: int = 0
    state: dict[str, Any] | None = field(default=None, repr=False)


class MemoryStore(base.RunStore):
    """A :class:`RunStore` in a dict; thread-safe (one lock, O(1) work under it)."""

    shared: ClassVar[bool] = False
    name: ClassVar[str] = "memory"

    def __init__(
        self, *, ttl: float = 3600.0, max_runs: int = 10_000, clock: Any = time.time
    ) -> None:
        self._ttl = ttl
        self._max = max(1, max_runs)
        self._clock = clock
        self._lock = threading.Lock()
        self._runs: OrderedDict[str, _Run] = OrderedDict()
        self._users: OrderedDict[str, UsageWindow] = OrderedDict()

    def _run(self, run_id: str, now: float, create: bool) -> _Run | None:
        run = self._runs.get(run_id)
        if run is not None and now - run.seen > self._ttl:
            del self._runs[run_id]
            run = None
        if run is None:
            if not create:
                return None
            run = _Run(started=now, seen=now)
            self._runs[run_id] = run
            if len(self._runs) > self._max:
                self._runs.popitem(last=False)
        else:
            self._runs.move_to_end(run_id)
        run.seen = now
        return run

    def read_stop(self, run_id: str) -> base.StopRecord | None:
        with self._lock:
            run = self._run(run_id, self._clock(), False)
            return run.stop if run is not None else None

    def write_stop(self, run_id: str, record: base.StopRecord) -> bool | None:
        with self._lock:
            run = self._run(run_id, self._clock(), True)
            assert run is not None
            if run.stop is not None:
                return False
            run.stop = record
            return True

    def gate(
        self, run_id: str, delta: base.CounterDelta, now: float, user: base.UserWindow | None = None
    ) -> base.GateAnswer | None:
        with self._lock:
            run = self._run(run_id, now, True)
            assert run is not None
            if run.stop is not None:
                return base.GateAnswer(run.stop, None)
            run.steps += delta.steps
            run.tool_calls += delta.tool_calls
            run.input_tokens += delta.input_tokens
            run.output_tokens += delta.output_tokens
            run.cost += delta.cost
            run.cost_unknown = run.cost_unknown or delta.cost_unknown
            totals = base.RunTotals(
                run.steps,
                run.tool_calls,
                run.input_tokens,
                run.output_tokens,
                None if run.cost_unknown else run.cost,
                run.started,
            )
            usage = None
            if user is not None:
                window = self._users.get(user.user)
                if window is None:
                    window = UsageWindow(user.seconds)
                    self._users[user.user] = window
                    if len(self._users) > self._max:
                        self._users.popitem(last=False)
                else:
                    self._users.move_to_end(user.user)
                tokens, cost = window.add(now, delta.tokens, delta.cost)
                usage = base.Usage(tokens, cost)
            return base.GateAnswer(None, totals, usage)

    def load_state(self, run_id: str, newer_than: int = 0) -> base.StoredState | None:
        with self._lock:
            run = self._run(run_id, self._clock(), False)
            if run is None or not run.version:
                return None
            if run.version <= newer_than:
                return base.StoredState(run.version, None)
            return base.StoredState(run.version, run.state)

    def save_state(self, run_id: str, data: dict[str, Any], expected_version: int) -> int | None:
        with self._lock:
            run = self._run(run_id, self._clock(), True)
            assert run is not None
            if run.version != expected_version:
                return -1
            run.version += 1
            run.state = data
            return run.version

    def close(self) -> None:
        with self._lock:
            self._runs.clear()
            self._users.clear()
