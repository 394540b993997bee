"""Signals, decisions and run end states: what detection produces.

A *signal* is one detector's finding; a *decision* is the policy's verdict over the run's
recent signals. Both are plain data so that every entry point (span processor, replay,
wrappers, direct use) reports them the same way.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

# Kept out of this (compiled) module, re-exported here: see otel_loopguard/interrupt.py
from otel_loopguard.interrupt import LoopGuardInterrupt as LoopGuardInterrupt


class Action(str, enum.Enum):
    """Guardrail actions, from harmless to final. Ordered: ``Action.WARN < Action.STOP``."""

    CONTINUE = "continue"
    WARN = "warn"
    REPLAN = "replan"
    PAUSE = "pause"
    STOP = "stop"

    @property
    def severity(self) -> int:
        return _SEVERITY[self]

    def __lt__(self, other: object) -> bool:  # type: ignore[override]
        if not isinstance(other, Action):
            return NotImplemented
        return _SEVERITY[self] < _SEVERITY[other]

    def __le__(self, other: object) -> bool:  # type: ignore[override]
        if not isinstance(other, Action):
            return NotImplemented
        return _SEVERITY[self] <= _SEVERITY[other]

    def __gt__(self, other: object) -> bool:  # type: ignore[override]
        if not isinstance(other, Action):
            return NotImplemented
        return _SEVERITY[self] > _SEVERITY[other]

    def __ge__(self, other: object) -> bool:  # type: ignore[override]
        if not isinstance(other, Action):
            return NotImplemented
        return _SEVERITY[self] >= _SEVERITY[other]


_SEVERITY = {
    Action.CONTINUE: 0,
    Action.WARN: 1,
    Action.REPLAN: 2,
    Action.PAUSE: 3,
    Action.STOP: 4,
}


class RunEndState(str, enum.Enum):
    """How a run ended; exported as ``loopguard.run.state`` and the ``loopguard.runs`` label."""

    COMPLETED = "completed"
    STOPPED = "stopped"
    BUDGET_EXCEEDED = "budget_exceeded"
    MAX_STEPS = "max_steps"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class Signal:
    """One detector's finding.

    ``kind`` refines the detector (``exact`` / ``near_duplicate`` for repetition,
    ``permanent`` / ``retryable`` for failures, ``tokens`` / ``cost`` / ... for budgets).
    ``evidence`` is small and never holds raw arguments or outputs unless content capture
    is on: it is exported on span events.
    """

    detector: str
    kind: str
    score: float
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)
    # for guards that answer with `replan`: the message the application may inject
    recommendation: str | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    """The policy's verdict after one event.

    ``recommendation`` is set for ``replan`` (the continuation prompt after a truncation,
    the read-only nudge, the "you stopped without completing" prompt) so an application can
    inject it. ``end_state`` is set when the decision ends the run (a budget exceeded is
    ``budget_exceeded``, a loop is ``stopped``).
    """

    action: Action
    risk: float = 0.0
    reasons: tuple[Signal, ...] = ()
    recommendation: str | None = None
    run_id: str | None = None
    end_state: RunEndState | None = None

    @property
    def detectors(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for signal in self.reasons:
            seen.setdefault(signal.detector, None)
        return tuple(seen)

    @property
    def reason(self) -> str:
        """One human line: the messages of the signals behind the decision."""
        return "; ".join(signal.message for signal in self.reasons)


CONTINUE = Decision(Action.CONTINUE)
