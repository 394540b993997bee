"""The guard's side of the run store: what a process shares of its runs, and when.

Only made when there is something to share (``OTEL_LOOPGUARD_STORE`` is a shared store,
or fleet budgets are set): with the default memory store and no fleet budget the guard
has no :class:`SharedRuns` and its gate does no added work.

- **Every pre-flight** (before each tool and model call) is one store round trip
  (:meth:`RunStore.gate`): a STOP decided by another process stops the run here too and
  vetoes the call; otherwise this process's new counts are added and the limits are
  checked on the run's totals over every process, and the fleet budget on the user's
  window. The tool gate sends it before it makes the tool's span and reads the answer
  after (:meth:`SharedRuns.preflight_begin`, :meth:`SharedRuns.preflight_end`), so the
  round trip overlaps that work.
- **A STOP made here** is written at once (and the run's state saved), so every other
  process vetoes the run's next call.
- **Detector state** is loaded when a run starts or resumes in this process and the
  stored version is newer than the one it has, and saved when an agent run ends its turn,
  with a compare-and-set: a replica that saved in between wins, this save is dropped
  (logged at debug level) and the next turn loads the newer state.
- **Fail-open**: a store that does not answer makes each call wait at most its timeout;
  the run then goes on with this process's local decisions.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from opentelemetry import baggage, metrics

from otel_loopguard.engine.decisions import Action, Decision, RunEndState, Signal
from otel_loopguard.engine.detectors.base import RunCounters
from otel_loopguard.engine.fleet_budget import fleet_budget_exceeded, fleet_budgets_on
from otel_loopguard.engine.monitor.persistence import decision_from_dict, decision_to_dict
from otel_loopguard.engine.store import (
    CounterDelta,
    RunStore,
    StopRecord,
    UserWindow,
    open_store,
)
from otel_loopguard.guard.run_context import _CURRENT_RUN
from otel_loopguard.telemetry import SCOPE_NAME

logger = logging.getLogger("otel_loopguard.store")

_USER_KEYS = ("enduser.id", "gen_ai.user.id")
_NO_USER = ""
_NOTHING_NEW = CounterDelta()
#: store latency buckets, seconds: loopback round trips are tens of microseconds
STORE_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25)


class _Sync:
    """What this process knows of one run's shared part."""

    __slots__ = ("cost_unknown", "counts", "lock", "stop_shared", "user", "version")

    def __init__(self) -> None:
        #: the local counters last added to the store: steps, tool calls, in, out tokens, cost
        self.counts: tuple[int, int, int, int, float] = (0, 0, 0, 0, 0.0)
        self.cost_unknown = False
        #: two threads of one run must not send the same new counts twice
        self.lock = threading.Lock()
        self.version = 0
        self.user: str | None = None  # None: not looked for yet; "": none found
        #: this process's STOP of the run reached the store (or came from it)
        self.stop_shared = False


@dataclass(slots=True)
class _Preflight:
    """A pre-flight whose gate request is on its way (:meth:`SharedRuns.preflight_begin`)."""

    run_id: str
    kind: str
    tokens: int
    sync: _Sync
    previous: tuple[tuple[int, int, int, int, float], bool]
    pending: object


class SharedRuns:
    """See the module docstring; one per :class:`~otel_loopguard.guard.hub.LoopGuard`."""

    def __init__(self, guard: Any, store: RunStore, meter_provider: Any = None) -> None:
        self.guard = guard
        self.store = store
        self.monitor = guard.monitor
        self.config = guard.config
        self._fleet = fleet_budgets_on(self.config)
        self._window = self.config.user_budget_window
        self._user_keys = (self.config.user_key,) if self.config.user_key else _USER_KEYS
        self._runs: OrderedDict[str, _Sync] = OrderedDict()
        self._max = max(self.config.max_runs, 1_000)
        self._lock = threading.Lock()
        meter = metrics.get_meter(SCOPE_NAME, meter_provider=meter_provider)
        self.latency = meter.create_histogram(
            "loopguard.store.duration",
            unit="s",
            description="Round trips to the run store (OTEL_LOOPGUARD_STORE), by operation",
            explicit_bucket_boundaries_advisory=list(STORE_BUCKETS),
        )
        self._latency_attributes: dict[str, dict[str, str]] = {}
        self.monitor.add_decision_listener(self._on_decision)

    # -- wiring ------------------------------------------------------------------------------

    def record_latency(self, seconds: float, operation: str) -> None:
        attributes = self._latency_attributes.get(operation)
        if attributes is None:
            attributes = self._latency_attributes.setdefault(operation, {"operation": operation})
        self.latency.record(seconds, attributes)

    def _sync(self, run_id: str) -> tuple[_Sync, bool]:
        """The run's record, and whether it is new in this process."""
        with self._lock:
            sync = self._runs.get(run_id)
            if sync is not None:
                self._runs.move_to_end(run_id)
                return sync, False
            sync = self._runs[run_id] = _Sync()
            if len(self._runs) > self._max:
                self._runs.popitem(last=False)
            return sync, True

    # -- the gate ----------------------------------------------------------------------------

    def preflight(
        self, run_id: str, kind: str, expected_tokens: int, begun: _Preflight | None = None
    ) -> tuple[Decision, bool]:
        """The monitor's pre-flight, on the run's shared counters and STOP. ``begun``: the
        call's pre-flight begun before its span was made; when the span turned out to
        belong to another run, that answer is read and dropped (what it counted stays
        counted) and the call's own run is gated."""
        if begun is not None:
            if begun.run_id == run_id:
                return self.preflight_end(begun)
            self.store.gate_end(begun.pending)
        return self.preflight_end(self.preflight_begin(run_id, kind, expected_tokens))

    def preflight_begin(self, run_id: str, kind: str, expected_tokens: int = 0) -> _Preflight:
        """:meth:`preflight`'s first half: the gate's request is sent (``RunStore.gate_begin``),
        so the caller's own work before the call (making its span) overlaps the round trip;
        :meth:`preflight_end` reads the answer and decides."""
        sync, new = self._sync(run_id)
        if new and self.store.shared:
            self._load(run_id, sync)
        delta, previous = self._claim(run_id, sync)
        user = self._user(sync) if self._fleet else None
        pending = self.store.gate_begin(
            run_id, delta, time.time(), UserWindow(user, self._window) if user else None
        )
        return _Preflight(run_id, kind, expected_tokens, sync, previous, pending)

    def preflight_end(self, begun: _Preflight) -> tuple[Decision, bool]:
        """The decision of the pre-flight :meth:`preflight_begin` started."""
        monitor = self.monitor
        run_id, kind, expected_tokens, sync = begun.run_id, begun.kind, begun.tokens, begun.sync
        answer = self.store.gate_end(begun.pending)
        if answer is None or answer.stop is not None:  # nothing was counted
            self._unclaim(sync, begun.previous)
        if answer is None:  # the store cannot answer: this process's local decisions
            return monitor.preflight_fresh(run_id, kind, expected_tokens=expected_tokens)  # type: ignore[no-any-return]
        if answer.stop is not None:
            sync.stop_shared = True
            decision = self._stop_decision(run_id, answer.stop)
            if monitor.adopt_stop(run_id, decision):
                return decision, True
            return monitor.preflight_fresh(run_id, kind, expected_tokens=expected_tokens)  # type: ignore[no-any-return]
        totals = None
        if answer.totals is not None and self.store.shared:
            shared = answer.totals
            totals = RunCounters(
                started_at=0.0,
                now=max(0.0, time.time() - shared.started),
                steps=shared.steps,
                tool_calls=shared.tool_calls,
                input_tokens=shared.input_tokens,
                output_tokens=shared.output_tokens,
                cost=shared.cost,
            )
        extra: Signal | None = None
        if answer.usage is not None:
            extra = fleet_budget_exceeded(
                answer.usage.tokens,
                answer.usage.cost,
                self.config,
                kind,
                expected_tokens=expected_tokens,
            )
        decision, fresh = monitor.preflight_fresh(
            run_id, kind, expected_tokens=expected_tokens, totals=totals, extra=extra
        )
        if decision.action is Action.STOP and not fresh and not sync.stop_shared:
            self._on_decision(decision, None)  # stopped here while the store was away
        return decision, fresh

    def _claim(
        self, run_id: str, sync: _Sync
    ) -> tuple[CounterDelta, tuple[tuple[int, int, int, int, float], bool]]:
        """The counts not sent yet, marked sent (so a second thread of the run does not
        send them too); :meth:`_unclaim` when the store did not count them."""
        with sync.lock:
            delta, counts, cost_unknown = self._delta(run_id, sync)
            previous = (sync.counts, sync.cost_unknown)
            sync.counts, sync.cost_unknown = counts, cost_unknown
        return delta, previous

    def _unclaim(
        self, sync: _Sync, previous: tuple[tuple[int, int, int, int, float], bool]
    ) -> None:
        with sync.lock:
            counts, cost_unknown = previous
            old = sync.counts
            # back to what the store has, unless a later claim moved on meanwhile
            sync.counts = tuple(min(a, b) for a, b in zip(old, counts, strict=True))  # type: ignore[assignment]
            sync.cost_unknown = sync.cost_unknown and cost_unknown

    def check(self, run_id: str) -> None:
        """``check_current_run``'s question, asked of the store too: a STOP made by
        another process stops the run here (one read)."""
        if not self.store.shared:
            return
        record = self.store.read_stop(run_id)
        if record is not None:
            self._sync(run_id)[0].stop_shared = True
            self.monitor.adopt_stop(run_id, self._stop_decision(run_id, record))

    def _delta(
        self, run_id: str, sync: _Sync
    ) -> tuple[CounterDelta, tuple[int, int, int, int, float], bool]:
        now = self.monitor.run_counts(run_id)
        if now is None:
            return CounterDelta(), sync.counts, sync.cost_unknown
        cost_unknown = now[4] is None
        counts = (now[0], now[1], now[2], now[3], now[4] or 0.0)
        old = sync.counts
        if counts == old and cost_unknown == sync.cost_unknown:
            return _NOTHING_NEW, counts, cost_unknown
        delta = CounterDelta(
            steps=max(0, counts[0] - old[0]),
            tool_calls=max(0, counts[1] - old[1]),
            input_tokens=max(0, counts[2] - old[2]),
            output_tokens=max(0, counts[3] - old[3]),
            cost=max(0.0, counts[4] - old[4]) if not cost_unknown else 0.0,
            cost_unknown=cost_unknown and not sync.cost_unknown,
        )
        return delta, counts, cost_unknown

    def _user(self, sync: _Sync) -> str | None:
        """The run's user or tenant: baggage first, then the run's agent span."""
        if sync.user is not None:
            return sync.user or None
        found = _NO_USER
        try:
            for key in self._user_keys:
                value = baggage.get_baggage(key)
                if value:
                    found = str(value)
                    break
            if not found:
                handle = _CURRENT_RUN.get()
                attributes = getattr(getattr(handle, "span", None), "attributes", None) or {}
                for key in self._user_keys:
                    value = attributes.get(key)
                    if value:
                        found = str(value)
                        break
        except Exception as exc:  # pragma: no cover - a span without readable attributes
            self.guard.telemetry.internal_error("store.user", exc)
        if found:  # a run's user does not change; an unknown one is looked for again
            sync.user = found
        return found or None

    # -- STOP and state -----------------------------------------------------------------------

    def _on_decision(self, decision: Decision, event: Any) -> None:
        """A STOP made in this process: written at once, with the run's state."""
        if decision.action is not Action.STOP or decision.run_id is None:
            return
        run_id = decision.run_id
        reason = decision.reasons[0].message if decision.reasons else "stop"
        record = StopRecord(decision.detectors, reason, time.time(), decision_to_dict(decision))
        if self.store.write_stop(run_id, record) is None:
            return  # the store is away: shared at the run's next gate call
        self._sync(run_id)[0].stop_shared = True
        if self.store.shared:
            self.save(run_id)

    def _stop_decision(self, run_id: str, record: StopRecord) -> Decision:
        if record.decision is not None:
            try:
                decision = decision_from_dict(record.decision, run_id)
                if decision.action is Action.STOP:
                    return decision
            except Exception as exc:
                key = getattr(self.store, "run_key", lambda r: r)(run_id)
                note = getattr(self.store, "note_corrupt", None)
                if note is not None:
                    note(key, exc)
        return Decision(
            Action.STOP,
            risk=1.0,
            run_id=run_id,
            end_state=RunEndState.STOPPED,
            recommendation=record.reason or "stopped by another process of this run",
        )

    def _load(self, run_id: str, sync: _Sync) -> None:
        stored = self.store.load_state(run_id, newer_than=sync.version)
        if stored is None:
            return
        if stored.data is not None:
            self.monitor.restore_run(stored.data)
            summary = self.monitor.run_snapshot(run_id)
            if summary is not None:  # what was restored is in the store's counters already
                c = summary.counters
                sync.counts = (
                    c.steps,
                    c.tool_calls,
                    c.input_tokens,
                    c.output_tokens,
                    c.cost or 0.0,
                )
                sync.cost_unknown = c.cost is None
        sync.version = stored.version

    def run_started(self, run_id: str) -> None:
        """A run starts or resumes in this process: load its state if the store's is newer."""
        if not self.store.shared:
            return
        try:
            sync, _ = self._sync(run_id)
            self._load(run_id, sync)
        except Exception as exc:
            self.guard.telemetry.internal_error("store.run_started", exc)

    def turn_ended(self, run_id: str, *, save: bool = True) -> None:
        """An agent run's turn ends here: add its last counts, save its state (``save``:
        for a run another process may continue, one keyed by its conversation)."""
        shared = self.store.shared
        if not shared and not self._fleet:
            return
        try:
            sync, _ = self._sync(run_id)
            delta, previous = self._claim(run_id, sync)
            if not delta.empty:  # the turn's last tokens count for its user too
                user = self._user(sync) if self._fleet else None
                window = UserWindow(user, self._window) if user else None
                answer = self.store.gate(run_id, delta, time.time(), window)
                if answer is None or answer.stop is not None:
                    self._unclaim(sync, previous)
            if save and shared:
                self.save(run_id)
            else:  # the run ends with this turn: forget it
                with self._lock:
                    self._runs.pop(run_id, None)
        except Exception as exc:
            self.guard.telemetry.internal_error("store.turn_ended", exc)

    def save(self, run_id: str) -> None:
        """Save the run's state if nobody saved a newer one meanwhile (compare-and-set)."""
        data = self.monitor.export_run(run_id)
        if data is None:
            return
        sync, _ = self._sync(run_id)
        version = self.store.save_state(run_id, data, sync.version)
        if version is None:
            return
        if version < 0:
            logger.debug(
                "otel-loopguard: run %s was saved by another process meanwhile; its state "
                "wins, this process loads it at the run's next turn",
                run_id,
            )
            return
        sync.version = version

    def close(self) -> None:
        self.store.close()


def shared_runs_for(guard: Any, meter_provider: Any = None) -> SharedRuns | None:
    """The guard's :class:`SharedRuns`, or ``None`` when nothing is shared (the default)."""
    config = guard.config
    if not hasattr(guard.monitor, "adopt_stop"):  # a user's own monitor: nothing shared
        return None
    shared_store = (config.store or "memory").strip().lower() != "memory"
    if not config.enabled or not (shared_store or fleet_budgets_on(config)):
        return None
    holder: dict[str, SharedRuns] = {}

    def on_error(kind: str, exc: BaseException) -> None:
        guard.telemetry.count_internal_error("store", exc)

    def on_latency(seconds: float, operation: str) -> None:
        runs = holder.get("runs")
        if runs is not None:
            runs.record_latency(seconds, operation)

    store = open_store(config, on_error=on_error, on_latency=on_latency)
    if not store.shared and not fleet_budgets_on(config):
        return None  # a Redis URL that could not be opened: said already, nothing to share
    runs = SharedRuns(guard, store, meter_provider)
    holder["runs"] = runs
    return runs
