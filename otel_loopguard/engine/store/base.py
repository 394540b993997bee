"""The run store: the part of a run that several processes share (``OTEL_LOOPGUARD_STORE``).

A run of a fleet (replicas behind a load balancer, sub-agents in other processes) is seen
in pieces by several processes; what they must agree on lives in a :class:`RunStore`:

- the **STOP** of a run (:class:`StopRecord`): once any process decides it, every process
  vetoes the run's next call;
- the **run counters** the budgets and pre-flight read (:class:`RunTotals`), summed over
  every process by the atomic :meth:`RunStore.gate` call (one round trip: veto if
  stopped, else add this process's :class:`CounterDelta` and return the totals);
- the **detector state** (``Monitor.export_run``), versioned so two replicas cannot
  silently overwrite each other (:meth:`RunStore.save_state` is a compare-and-set);
- **rolling-window usage** per user or tenant, for fleet budgets (:class:`Usage`, in the
  same gate call).

Every method of a store is fail-open: it never raises into the agent and never waits
longer than the store's timeout; an unreachable store answers ``None`` (the caller goes on
with its local state). Another backend is a new subclass, not a change of the monitor.
The default :class:`~otel_loopguard.engine.store.memory.MemoryStore` keeps all of it in
the process (what a single process had before stores existed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

#: ``on_error(kind, exc)``: how a store reports an outage or a bad value (the guard counts
#: it in ``loopguard.internal_errors{where=store}``); kinds: ``unavailable``, ``corrupt``
ErrorSink = Callable[[str, BaseException], None]
#: ``on_latency(seconds, operation)``: one sample per store round trip
LatencySink = Callable[[float, str], None]


@dataclass(frozen=True)
class StopRecord:
    """A run's STOP as the store holds it: who decided, why, when (Unix seconds), and the
    decision as ``persistence`` writes it (``None`` when another program wrote the STOP).
    Holds no tool argument or result: signals carry hashes unless content capture is on."""

    detectors: tuple[str, ...]
    reason: str
    time: float
    decision: dict[str, Any] | None = None


@dataclass(frozen=True)
class CounterDelta:
    """What one process added to a run's counters since its last gate call.

    ``cost_unknown``: a model of this process's part of the run has no price, so the run's
    cost is unknown from now on (a cost limit is then skipped, never guessed)."""

    steps: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    cost_unknown: bool = False

    @property
    def empty(self) -> bool:
        return not (
            self.steps
            or self.tool_calls
            or self.input_tokens
            or self.output_tokens
            or self.cost
            or self.cost_unknown
        )

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class RunTotals:
    """A run's counters summed over every process, and when it started (Unix seconds)."""

    steps: int
    tool_calls: int
    input_tokens: int
    output_tokens: int
    cost: float | None
    started: float


@dataclass(frozen=True)
class Usage:
    """A user's (or tenant's) tokens and cost over the rolling window, every run summed."""

    tokens: int
    cost: float


@dataclass(frozen=True)
class GateAnswer:
    """The answer of one gate call: the run's STOP (then nothing was counted), or the
    totals after adding the delta and the user's usage (``None`` when no user was given)."""

    stop: StopRecord | None
    totals: RunTotals | None
    usage: Usage | None = None


@dataclass(frozen=True)
class StoredState:
    """A run's exported detector state and its version (1 for the first save)."""

    version: int
    data: dict[str, Any] | None


@dataclass(frozen=True)
class UserWindow:
    """Which usage window a gate call adds to: the user's (or tenant's) id and the window."""

    user: str
    seconds: float


class RunStore:
    """The interface every backend implements; see the module docstring.

    ``shared`` tells whether other processes see what this store holds (the guard only
    does the store's work on its hot path for a shared store, or when fleet budgets are
    set). Methods return ``None`` when the store cannot answer (fail-open).
    """

    shared: ClassVar[bool] = False
    name: ClassVar[str] = "store"

    def read_stop(self, run_id: str) -> StopRecord | None:
        """The run's STOP, or ``None`` (not stopped, or the store cannot answer)."""
        raise NotImplementedError

    def write_stop(self, run_id: str, record: StopRecord) -> bool | None:
        """Record the run's STOP; the first STOP wins. ``True`` when this one was written,
        ``False`` when the run was stopped already, ``None`` when the store cannot answer."""
        raise NotImplementedError

    def gate(
        self, run_id: str, delta: CounterDelta, now: float, user: UserWindow | None = None
    ) -> GateAnswer | None:
        """One atomic step before a call: the STOP if the run is stopped (nothing counted),
        else add ``delta`` (and its tokens and cost to ``user``'s window) and return the
        totals. ``now`` is Unix seconds (a run's first gate call sets its start)."""
        raise NotImplementedError

    def gate_begin(
        self, run_id: str, delta: CounterDelta, now: float, user: UserWindow | None = None
    ) -> object:
        """:meth:`gate` in two halves, so the caller's own work overlaps the round trip: a
        store that talks to a server sends the request here, and :meth:`gate_end` reads
        the answer (call it once, on the same thread, before any other gate of this
        caller). Here nothing is sent: :meth:`gate_end` does the whole gate."""
        return (run_id, delta, now, user)

    def gate_end(self, pending: object) -> GateAnswer | None:
        """The answer of the gate :meth:`gate_begin` started (``None``: no answer)."""
        call: tuple[str, CounterDelta, float, UserWindow | None] = pending  # type: ignore[assignment]
        return self.gate(*call)

    def load_state(self, run_id: str, newer_than: int = 0) -> StoredState | None:
        """The stored state if its version is above ``newer_than`` (else a
        :class:`StoredState` with that version and no data); ``None``: nothing stored, or
        the store cannot answer."""
        raise NotImplementedError

    def save_state(self, run_id: str, data: dict[str, Any], expected_version: int) -> int | None:
        """Compare-and-set: store ``data`` as version ``expected_version + 1`` if the stored
        version is still ``expected_version``. The new version, ``-1`` when another process
        saved in between (nothing written), ``None`` when the store cannot answer."""
        raise NotImplementedError

    def close(self) -> None:
        """Release connections; the store answers ``None`` afterwards."""
