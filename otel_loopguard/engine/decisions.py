"""Signals, decisions and run end states: what detection produces.

A *signal* is one detector's finding; a *decision* is the policy's verdict over the run's
recent signals. Both are plain data so that every entry point (span processor, replay,
wrappers, direct use) reports them the same way.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from otel_loopguard.engine.events import run_key

# Kept out of this (compiled) module, re-exported here: see otel_loopguard/engine/interrupt.py
from otel_loopguard.engine.interrupt import LoopGuardInterrupt as LoopGuardInterrupt


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
    #: reached a STOP: in ``enforce`` mode, interrupted by a gate; in ``observe`` mode, the
    #: stop that would have been (observe never interrupts)
    STOPPED = "stopped"
    #: ``enforce`` mode decided STOP, but no gate interrupted the run (its tool calls are
    #: spans of another instrumentation or plain OpenTelemetry, with no otel-loopguard gate)
    STOP_NOT_ENFORCED = "stop_not_enforced"
    BUDGET_EXCEEDED = "budget_exceeded"
    MAX_STEPS = "max_steps"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"
    ERROR = "error"


def _number(value: Any) -> float:
    """A score or risk as a float; 0.0 for what is not a number."""
    if value.__class__ is float:
        return value  # type: ignore[no-any-return]
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return 0.0


def _evidence(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if value.__class__ is dict:
        return value  # type: ignore[no-any-return]
    try:
        return dict(value)
    except Exception:
        return {"evidence": value}


@dataclass(frozen=True, slots=True, init=False)
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

    # Written out (see Event.__init__): custom detectors make signals, and what they pass
    # is taken as it comes (an int score, no evidence), in both builds alike
    def __init__(
        self,
        detector: Any,
        kind: Any,
        score: Any,
        message: Any,
        evidence: Any = None,
        recommendation: Any = None,
    ) -> None:
        object.__setattr__(self, "detector", run_key(detector))
        object.__setattr__(self, "kind", run_key(kind))
        object.__setattr__(self, "score", _number(score))
        object.__setattr__(self, "message", run_key(message))
        object.__setattr__(self, "evidence", _evidence(evidence))
        object.__setattr__(
            self, "recommendation", None if recommendation is None else run_key(recommendation)
        )


@dataclass(frozen=True, slots=True, init=False)
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

    # Written out (see Signal): custom policies make decisions; ``"stop"`` is
    # ``Action.STOP`` (a plain string never compared equal to it by identity, so it did
    # not stop the run), reasons may be any iterable. An unknown action raises ValueError.
    def __init__(
        self,
        action: Any,
        risk: Any = 0.0,
        reasons: Any = (),
        recommendation: Any = None,
        run_id: Any = None,
        end_state: Any = None,
    ) -> None:
        object.__setattr__(self, "action", action if action.__class__ is Action else Action(action))
        object.__setattr__(self, "risk", _number(risk))
        object.__setattr__(
            self,
            "reasons",
            reasons if reasons.__class__ is tuple else () if reasons is None else tuple(reasons),
        )
        object.__setattr__(
            self, "recommendation", None if recommendation is None else run_key(recommendation)
        )
        object.__setattr__(self, "run_id", None if run_id is None else run_key(run_id))
        object.__setattr__(
            self,
            "end_state",
            end_state
            if end_state is None or end_state.__class__ is RunEndState
            else RunEndState(end_state),
        )

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
