"""Per-run state (counters, detector states, policy window, the STOP) and what callers
see of it (:class:`RunSummary`, :class:`FirstDecision`)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import Any

from otel_loopguard.engine.decisions import Action, Decision, RunEndState, Signal
from otel_loopguard.engine.detectors.base import RunCounters
from otel_loopguard.engine.detectors.call_tracking import PendingCalls


@dataclass(frozen=True, slots=True)
class FirstDecision:
    """Where a run first reached an action: the decision and the event that caused it."""

    decision: Decision
    event_index: int
    event_kind: str | None = None
    tool_name: str | None = None
    trace_id: str | None = None
    span_id: str | None = None


@dataclass(frozen=True, slots=True)
class RunSummary:
    """A run's state as a caller sees it (a copy: later events do not change it).

    ``final_action`` is the most severe action decided in the run; ``first_stop`` is the
    STOP decision and the event that caused it.
    """

    run_id: str
    agent: str | None
    counters: RunCounters
    max_risk: float
    final_action: Action
    stopped: bool
    end_state: RunEndState | None
    first_stop: FirstDecision | None
    last_decision: Decision
    keyed_by: str | None = None
    signals: int = 0


class RunState:
    """Mutable per-run state; touched only under ``lock`` (and the table lock for LRU)."""

    __slots__ = (
        "agent",
        "agent_replans",
        "continue_decision",
        "counters",
        "first_stop",
        "keyed_by",
        "last_decision",
        "last_seen",
        "lock",
        "max_action",
        "max_risk",
        "nudges",
        "pending",
        "run_id",
        "signal_count",
        "states",
        "stop",
        "window",
    )

    def __init__(self, run_id: str, now: float, states: list[Any]) -> None:
        self.run_id = run_id
        self.lock = threading.Lock()
        self.counters = RunCounters(started_at=now, last_seen=now, now=now)
        self.states = states
        # tool calls awaiting their result, shared by every detector (pair_tool_event)
        self.pending = PendingCalls()
        # the policy's window, oldest first: a tuple, replaced only when signals arrive
        # (no deque: its first block alone weighs more than a full 12-signal tuple)
        self.window: tuple[Signal, ...] = ()
        self.signal_count = 0
        self.continue_decision = Decision(Action.CONTINUE, run_id=run_id)
        self.last_decision = self.continue_decision
        self.max_action = Action.CONTINUE
        self.max_risk = 0.0
        self.stop: Decision | None = None
        self.first_stop: FirstDecision | None = None
        self.agent: str | None = None
        # sub-agent name -> loop decisions about it answered with replan (policy.py)
        self.agent_replans: dict[str, int] = {}
        # detector -> its recommendations delivered to the agent's model (the ladder)
        self.nudges: dict[str, int] = {}
        self.keyed_by: str | None = None
        self.last_seen = now


def summarize(run: RunState, end_state: RunEndState | None) -> RunSummary:
    """A copy of the run's state for callers (later events do not change it)."""
    return RunSummary(
        run_id=run.run_id,
        agent=run.agent,
        counters=replace(run.counters),
        max_risk=run.max_risk,
        final_action=run.max_action,
        stopped=run.stop is not None,
        end_state=end_state,
        first_stop=run.first_stop,
        last_decision=run.last_decision,
        keyed_by=run.keyed_by,
        signals=run.signal_count,
    )
