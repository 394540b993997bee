"""The monitor's pipeline: an event through counters, pairing, detectors and the policy to
a decision; one entry point for every adapter (the run table is ``run_table.py``, the
run state ``run_state.py``, export/restore ``persistence.py``).

The span processor, saved-trace replay, our framework wrappers and direct Python use all
call :meth:`Monitor.observe` with :class:`~otel_loopguard.engine.events.Event` objects and read a
:class:`~otel_loopguard.engine.decisions.Decision` back. Everything here is built so that the
monitor can sit on an agent's hot path without the agent noticing:

- **O(1) per event.** Run counters are updated before the detectors run; detectors keep
  bounded state; the policy sees a window of at most ``signal_window`` signals. Detectors
  may declare ``event_kinds`` (a set of :class:`EventKind`) and are then only called for
  those kinds; the dispatch table is built once.
- **Thread- and asyncio-safe.** A global lock guards only the run table (get / create /
  LRU touch / evict, all O(1)); each run has its own lock for the detector and policy
  work, so different runs proceed in parallel and one run's events are serialized. No
  lock is held across an ``await`` (there are none), so plain locks are fine in asyncio.
- **Bounded.** At most ``max_runs`` live runs (least recently used evicted first) and runs
  idle for ``run_ttl`` seconds are dropped. The run table is kept in last-touched order, so
  idle runs are always at its front and the sweep looks at a few entries per call. An
  evicted run's later events start a fresh run; nothing raises.
- **Never breaks the host.** A detector, policy or listener that raises is caught,
  counted in :attr:`Monitor.internal_errors`, logged once, and the run goes on.
- **A stop is final.** Once a run has a STOP decision, every later ``observe`` and
  ``preflight`` returns that decision without running detectors (counters still count).
  Decision listeners hear each decision once, when it is made.

Time comes from the injectable ``clock`` (``time.monotonic`` by default), so replay can
drive it from span timestamps and tests from a fake clock.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any, Literal

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import CONTINUE, Action, Decision, RunEndState, Signal
from otel_loopguard.engine.detectors.base import Detector, RunCounters, build_default_detectors
from otel_loopguard.engine.detectors.budget import budget_exceeded
from otel_loopguard.engine.detectors.call_tracking import pair_tool_event
from otel_loopguard.engine.events import Event, EventKind, optional_text, run_key
from otel_loopguard.engine.monitor.persistence import export_run_state, restore_run_state
from otel_loopguard.engine.monitor.run_state import (
    FirstDecision,
    RunState,
    RunSummary,
    summarize,
)
from otel_loopguard.engine.monitor.run_table import SWEEP_EVERY, RunTable
from otel_loopguard.engine.policy import (
    Policy,
    PolicyInput,
    is_sub_agent_replan,
    load_policy,
    only_on_signals,
)
from otel_loopguard.engine.pricing import PriceTable
from otel_loopguard.engine.run_identity import RunKey

logger = logging.getLogger("otel_loopguard.engine.monitor")

DecisionListener = Callable[[Decision, Event], None]
#: what a run is keyed by: a RunKey, or its text
KeyedBy = RunKey | Literal["conversation", "root", "trace"]

_ALL_KINDS = tuple(EventKind)
# Enum members as module constants: on Python 3.11 ``EventKind.TOOL_CALL`` goes through
# the enum metaclass's __getattr__ hook and costs several times a global lookup; the hot
# path reads these instead.
_TOOL_CALL = EventKind.TOOL_CALL
_LLM_RESPONSE = EventKind.LLM_RESPONSE
_SUB_AGENTS_CAP = 64  # sub-agents whose replans a run remembers


class Monitor:
    """Feeds events through detectors and the policy, per run; see the module docstring."""

    def __init__(
        self,
        config: LoopGuardConfig | None = None,
        detectors: Iterable[Detector] | None = None,
        policy: Policy | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config if config is not None else LoopGuardConfig.from_env()
        self.detectors: tuple[Detector, ...] = tuple(
            build_default_detectors(self.config) if detectors is None else detectors
        )
        self.policy: Policy = policy if policy is not None else load_policy(self.config.policy)
        self._clock = clock
        self._ttl = self.config.run_ttl
        self._window_size = self.config.signal_window
        self._table = RunTable(self.config.max_runs, self._ttl, self._new_states)
        #: the table's dict of live runs (the same object; tests and benchmarks read it)
        self._runs = self._table.runs
        # presets answer `continue` to an event without signals: skip calling them then
        self._policy_skips_quiet_events = only_on_signals(self.policy)
        self._listeners: list[DecisionListener] = []
        self._error_listeners: list[Callable[[str, BaseException], None]] = []
        self._errors_lock = threading.Lock()
        self._internal_errors = 0
        self._logged: set[str] = set()
        self._prices = self._load_prices()
        # kind -> ((index, bound observe), ...): detectors that asked for only some kinds
        # are not called for the others
        self._dispatch: dict[EventKind, tuple[tuple[int, Callable[..., Any]], ...]] = {}
        for kind in _ALL_KINDS:
            entries = []
            for index, detector in enumerate(self.detectors):
                kinds = getattr(detector, "event_kinds", None)
                if kinds is None or kind in kinds:
                    entries.append((index, detector.observe))
            self._dispatch[kind] = tuple(entries)

    # ------------------------------------------------------------------ public API

    @property
    def internal_errors(self) -> int:
        """Errors caught inside the monitor (detectors, policy, listeners, bad input)."""
        return self._internal_errors

    @property
    def evicted_runs(self) -> int:
        """Runs dropped by the LRU cap or the idle TTL (not by :meth:`end_run`)."""
        return self._table.evicted

    @property
    def active_runs(self) -> int:
        """Live runs, after dropping those idle past the TTL."""
        return self._table.live(self._clock())

    def add_decision_listener(self, callback: DecisionListener) -> None:
        """``callback(decision, event)`` for every non-continue decision, once, when made."""
        self._listeners.append(callback)

    def add_error_listener(self, callback: Callable[[str, BaseException], None]) -> None:
        """``callback(where, exc)`` for every internal error the monitor catches.

        How the OpenTelemetry side counts detector, policy and listener failures in
        ``loopguard.internal_errors``; the monitor itself knows no metrics. A callback that
        raises is ignored.
        """
        self._error_listeners.append(callback)

    def observe(self, event: Event | Any) -> Decision:
        """Count ``event``, run the detectors and the policy; never raises (not even for
        something that is not an :class:`Event`: ``| Any`` keeps a compiled build from
        checking the type before the ``try``)."""
        return self.observe_fresh(event)[0]

    def observe_fresh(self, event: Event | Any) -> tuple[Decision, bool]:
        """:meth:`observe`, and whether the decision was made just now.

        A stopped run answers every later event with its standing STOP; ``fresh`` is False
        for that repeat and for ``continue``, True for a decision this event made (the one
        the decision listeners hear). Callers export a decision only when it is fresh.
        """
        try:  # the hot path: one function, locals, no allocation unless a signal fires
            run_id = event.run_id
            if run_id.__class__ is not str:  # an Event made by hand with a UUID or int id
                run_id = run_key(run_id)
            now = self._clock()
            table = self._table
            run = table.newest
            touches = table.touches + 1
            if not touches & SWEEP_EVERY or run is None or now - run.last_seen > self._ttl:
                run = table.touch(run_id, now)
            elif run.run_id == run_id:  # the fast path of touch, inlined: same run again
                run.last_seen = now
                table.touches = touches
            else:  # another live run (interleaved agents): touch's second path, inlined
                table_lock = table.lock
                table_lock.acquire()
                try:
                    run = table.runs.get(run_id)
                    if run is not None and now - run.last_seen <= self._ttl:
                        table.runs.move_to_end(run_id)
                        table.newest = run
                        run.last_seen = now
                        table.touches = touches
                    else:
                        run = None
                finally:
                    table_lock.release()
                if run is None:  # new, or idle past the TTL
                    run = table.touch(run_id, now)
            # explicit acquire/release: `with` costs about twice as much per event
            lock = run.lock
            lock.acquire()
            try:
                counters = run.counters
                counters.events += 1
                counters.now = now
                counters.last_seen = now
                kind = event.kind
                if type(kind) is not EventKind:  # a plain "tool_call" string from a plug-in
                    kind = EventKind(kind)
                if kind is _TOOL_CALL:
                    counters.tool_calls += 1
                elif kind is _LLM_RESPONSE:
                    counters.steps += 1
                    if event.input_tokens or event.output_tokens:
                        self._count_tokens(event, counters)
                if run.agent is None and event.actor:
                    run.agent = event.actor
                if run.stop is not None:
                    return run.stop, False
                pair_tool_event(event, kind, run.pending, counters, run.agent)

                new_signals: list[Signal] | None = None
                states = run.states
                for index, detector_observe in self._dispatch[kind]:
                    try:
                        signal = detector_observe(event, states[index], counters)
                    except Exception as exc:
                        self._internal_error(f"detector {self.detectors[index].name}", exc)
                        continue
                    if signal is not None:
                        if new_signals is None:
                            new_signals = [signal]
                        else:
                            new_signals.append(signal)
                if new_signals is None:
                    if self._policy_skips_quiet_events:
                        run.last_decision = run.continue_decision
                        return run.continue_decision, False
                    fresh: tuple[Signal, ...] = ()
                else:
                    fresh = tuple(new_signals)
                    run.window = (run.window + fresh)[-self._window_size :]
                    run.signal_count += len(fresh)
                decision = self._decide(run, event, fresh)
                if decision.action is Action.CONTINUE:
                    run.last_decision = decision
                    return decision, False
                self._record(run, decision, event)
            finally:
                lock.release()
            self._announce(decision, event)
            return decision, True
        except Exception as exc:  # never break the host program
            self._internal_error("observe", exc)
            return CONTINUE, False

    def preflight(
        self,
        run_id: str | Any,
        kind: Literal["tool_call", "llm_call"] = "tool_call",
        *,
        expected_tokens: int = 0,
    ) -> Decision:
        """Veto before a tool or model call: a stopped run, or a limit the call would pass.

        Limits (0 = off): ``max_steps`` (model calls), ``max_tool_calls``, ``timeout``,
        ``token_budget`` (used + ``expected_tokens``; a model call with no headroom left
        is vetoed) and ``cost_limit``. A veto is a STOP decision that also stops the run.
        An unknown run is started and continues. Never raises. A run id that is not a
        ``str`` (a UUID, an int) names the run by its text, as the event builders do.
        """
        return self.preflight_fresh(run_id, kind, expected_tokens=expected_tokens)[0]

    def preflight_fresh(
        self,
        run_id: str | Any,
        kind: Literal["tool_call", "llm_call"] = "tool_call",
        *,
        expected_tokens: int = 0,
        totals: RunCounters | None = None,
        extra: Signal | None = None,
    ) -> tuple[Decision, bool]:
        """:meth:`preflight`, and whether the decision was made just now (see
        :meth:`observe_fresh`).

        ``totals``: the run's counters summed over every process (the run store's): the
        limits are checked on them instead of this process's counters (``now -
        started_at`` is the run's wall time). ``extra``: a veto signal found outside the
        run (a user's fleet budget), judged by the policy like a limit's when no limit of
        the run vetoes first."""
        try:
            return self._preflight(run_key(run_id), kind, expected_tokens, totals, extra)
        except Exception as exc:
            self._internal_error("preflight", exc)
            return CONTINUE, False

    def adopt_stop(self, run_id: str | Any, decision: Decision | Any) -> bool:
        """Stop the run with a STOP decided elsewhere (another process, through the run
        store): every later ``observe`` and ``preflight`` answers it, as for a STOP made
        here. Not announced to the decision listeners (it was announced where it was
        made). ``True`` when the run was not stopped yet; never raises."""
        try:
            key = run_key(run_id)
            run = self._table.touch(key, self._clock())
            with run.lock:
                if run.stop is not None:
                    return False
                if decision.run_id != key:
                    decision = replace(decision, run_id=key)
                self._record(run, decision, None)
                return True
        except Exception as exc:
            self._internal_error("adopt_stop", exc)
            return False

    def note_delivered(self, run_id: str | Any, detector: str | Any) -> None:
        """A ``replan`` of ``detector`` reached the run's model (a framework package added
        its recommendation to a model request): the policy's ladder counts it
        (:attr:`~otel_loopguard.engine.policy.PolicyInput.nudges`). Never raises."""
        try:
            run = self._table.get(run_key(run_id))
            if run is None:
                return
            with run.lock:
                nudges = run.nudges
                name = run_key(detector)
                if name in nudges or len(nudges) < _SUB_AGENTS_CAP:
                    nudges[name] = nudges.get(name, 0) + 1
        except Exception as exc:
            self._internal_error("note_delivered", exc)

    def start_run(
        self, run_id: str | Any, *, agent: str | Any = None, keyed_by: KeyedBy | None = None
    ) -> None:
        """Register a run (or refresh it) with its agent name and how it is keyed."""
        run = self._table.touch(run_key(run_id), self._clock())
        with run.lock:
            if agent and run.agent is None:
                run.agent = optional_text(agent)
            if keyed_by:
                run.keyed_by = keyed_by

    def end_run(self, run_id: str | Any, state: RunEndState | None = None) -> RunSummary | None:
        """Drop the run and return its summary (``None`` for an unknown run).

        Without ``state`` the end state is that of the run's STOP decision (``stopped``,
        ``budget_exceeded``, ``max_steps``, ``timed_out``) or ``completed``.
        """
        run = self._table.pop(run_key(run_id))
        if run is None:
            return None
        with run.lock:
            if state is None:
                state = (
                    (run.stop.end_state or RunEndState.STOPPED)
                    if run.stop is not None
                    else RunEndState.COMPLETED
                )
            return summarize(run, state)

    def run_snapshot(self, run_id: str | Any) -> RunSummary | None:
        """The run's current summary without touching its LRU position."""
        run = self._table.get(run_key(run_id))
        if run is None:
            return None
        with run.lock:
            return summarize(run, None)

    def run_counts(self, run_id: str | Any) -> tuple[int, int, int, int, float | None] | None:
        """The run's steps, tool calls, input and output tokens and cost (``None`` when
        unknown): what the run store adds up before each call, without the copy a
        :meth:`run_snapshot` makes."""
        run = self._table.get(run_key(run_id))
        if run is None:
            return None
        with run.lock:
            c = run.counters
            return c.steps, c.tool_calls, c.input_tokens, c.output_tokens, c.cost

    def export_run(self, run_id: str | Any) -> dict[str, Any] | None:
        """A small JSON-able dict of the run, for :meth:`restore_run` in another process.

        Holds counters (time as elapsed seconds, since clocks differ between processes),
        each detector's exported state, the signal window and the STOP decision. Raw
        arguments and outputs are not in it (signals never hold them unless content
        capture is on).
        """
        run = self._table.get(run_key(run_id))
        if run is None:
            return None
        now = self._clock()
        with run.lock:
            return export_run_state(run, self.detectors, now, self._internal_error)

    def restore_run(self, data: dict[str, Any] | Any) -> None:
        """Recreate a run from :meth:`export_run` output; it continues where it was.

        Replaces a live run of the same id. Missing keys (older exports) get fresh values;
        a detector state that does not restore starts fresh. Never raises: unusable data
        (not a dict, no ``run_id``, wrong types) is counted in :attr:`internal_errors`,
        logged once, and no run is restored.
        """
        try:
            self._restore_run(data)
        except Exception as exc:
            self._internal_error("restore_run", exc)

    def _restore_run(self, data: dict[str, Any]) -> None:
        now = self._clock()
        run = restore_run_state(
            data, self.detectors, self._new_states, self._window_size, now, self._internal_error
        )
        self._table.replace(run.run_id, run, now)

    # ------------------------------------------------------------------ internals

    def _decide(self, run: RunState, event: Event, fresh: tuple[Signal, ...]) -> Decision:
        """Ask the policy; contain its errors; give the decision this run's id."""
        try:
            actor = event.actor
            sub_agent = actor if actor and run.agent and actor != run.agent else None
            decision = self.policy(
                PolicyInput(
                    run.run_id,
                    event,
                    fresh,
                    run.window,
                    run.counters,
                    self.config,
                    sub_agent,
                    run.agent_replans.get(sub_agent, 0) if sub_agent else 0,
                    run.nudges,
                )
            )
            if sub_agent and is_sub_agent_replan(decision):
                replans = run.agent_replans
                if sub_agent in replans or len(replans) < _SUB_AGENTS_CAP:
                    replans[sub_agent] = replans.get(sub_agent, 0) + 1
            if decision is CONTINUE:
                return run.continue_decision
            if not isinstance(decision, Decision):
                raise TypeError(f"policy returned {type(decision).__name__}, not a Decision")
        except Exception as exc:
            self._internal_error("policy", exc)
            return run.continue_decision
        if decision.action is Action.STOP and decision.end_state is None:
            return replace(decision, run_id=run.run_id, end_state=RunEndState.STOPPED)
        if decision.run_id != run.run_id:
            return replace(decision, run_id=run.run_id)
        return decision

    def _record(self, run: RunState, decision: Decision, event: Event | None) -> None:
        """Keep a non-continue decision in the run: last, most severe, the stop."""
        run.last_decision = decision
        action = decision.action
        if decision.risk > run.max_risk:
            run.max_risk = decision.risk
        if action > run.max_action:
            run.max_action = action
        if action is Action.STOP:
            run.stop = decision
            run.first_stop = FirstDecision(
                decision,
                run.counters.events,
                EventKind(event.kind).value if event is not None else None,
                event.tool_name if event is not None else None,
                event.trace_id if event is not None else None,
                event.span_id if event is not None else None,
            )

    def _announce(self, decision: Decision, event: Event) -> None:
        for listener in self._listeners:
            try:
                listener(decision, event)
            except Exception as exc:
                self._internal_error(f"decision listener {listener!r}", exc)

    def _preflight(
        self,
        run_id: str,
        kind: str,
        expected_tokens: int,
        totals: RunCounters | None = None,
        extra: Signal | None = None,
    ) -> tuple[Decision, bool]:
        now = self._clock()
        run = self._table.touch(run_id, now)
        with run.lock:
            if run.stop is not None:
                return run.stop, False
            counters = run.counters
            counters.now = now
            signal = budget_exceeded(
                counters if totals is None else totals,
                self.config,
                "llm_call" if kind == "llm_call" else "tool_call",
                expected_tokens=expected_tokens,
            )
            if signal is None:
                signal = extra
            if signal is None:
                return run.continue_decision, False
            run.window = (*run.window, signal)[-self._window_size :]
            run.signal_count += 1
            event = Event(
                EventKind.LLM_RESPONSE if kind == "llm_call" else EventKind.TOOL_CALL,
                run_id,
                actor=run.agent,
                details={"preflight": True},
            )
            decision = self._decide(run, event, (signal,))
            if decision.action is Action.CONTINUE:
                return decision, False
            self._record(run, decision, event)
        self._announce(decision, event)
        return decision, True

    def _count_tokens(self, event: Event, counters: RunCounters) -> None:
        in_tokens = event.input_tokens or 0
        out_tokens = event.output_tokens or 0
        if not (in_tokens or out_tokens):
            return
        counters.input_tokens += in_tokens
        counters.output_tokens += out_tokens
        if counters.cost is None:
            return
        cost = None
        if self._prices is not None and event.model:
            cost = self._prices.cost(event.model, in_tokens, out_tokens)
        counters.cost = None if cost is None else counters.cost + cost

    def _load_prices(self) -> PriceTable | None:
        try:
            return PriceTable.from_config(self.config)
        except Exception as exc:
            self._internal_error("price table", exc)
            return None

    def _new_states(self) -> list[Any]:
        states: list[Any] = []
        for detector in self.detectors:
            try:
                states.append(detector.new_state())
            except Exception as exc:
                self._internal_error(f"detector {detector.name} new_state", exc)
                states.append(None)
        return states

    def _internal_error(self, where: str, exc: BaseException) -> None:
        """Count an internal error; log the first one from each place with its traceback."""
        with self._errors_lock:
            self._internal_errors += 1
            first = where not in self._logged
            if first:
                self._logged.add(where)
        for listener in self._error_listeners:
            with contextlib.suppress(Exception):  # counting an error must not become one
                listener(where, exc)
        if first:
            logger.warning(
                "otel-loopguard: internal error in %s (logged once, the run goes on): %r",
                where,
                exc,
                exc_info=exc,
            )
