"""Delivery: a ``replan``'s recommendation reaches the run's next model request, once.

The policy answers weaker evidence (a read-only loop, an environmental shell failure, a
truncated answer, an empty give-up after failing tools, a model repeating itself, a looping
sub-agent) with ``replan`` and a recommendation: a short message for the model. In
``enforce`` mode (and with ``OTEL_LOOPGUARD_DELIVER_RECOMMENDATIONS`` on) the decision puts
that message in the run's *mailbox*; the next model call a framework package wraps in that
run takes it out (:meth:`Deliveries.take`) and adds it to its request as an internal
message, in the framework's own format (:mod:`otel_loopguard.kit.recommendations`). One
message per run waits at a time: a newer replan replaces an older one that was never taken.

What a recommendation becomes, counted in ``loopguard.recoveries`` {detector, outcome}:

- ``resolved``: delivered, and the run ended without the ladder stopping it for that
  detector;
- ``persisted``: delivered, and the detector fired again after it: the policy's ladder
  stopped the run (a signal of kind ``after_nudge``);
- ``not_delivered``: never reached a model: the run ended (or stopped, or a newer replan
  replaced it) before a model call took it, a package could not add it to its request, or
  nothing in this process can deliver (the span processor alone, ``serve``): then the
  decision event says so at once and one warning per process says what to install.

Bounded: at most ``max_runs`` runs have a waiting message or delivered counts (the oldest
dropped). Thread-safe: one lock around dict updates; :meth:`take` with nothing waiting
anywhere is one truthiness test, the cost every model call pays.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from otel_loopguard.engine.decisions import Action, Decision
from otel_loopguard.engine.events import Event
from otel_loopguard.engine.policy import AFTER_NUDGE

logger = logging.getLogger("otel_loopguard")

#: ``loopguard.recommendation.delivery`` on a replan's decision event
QUEUED = "queued"
NOT_DELIVERED = "not_delivered"
OFF = "off"
#: framework packages instrumented in this process that deliver recommendations (each says
#: so when it builds its wrappers: :func:`otel_loopguard.kit.recommendations.can_deliver`)
DELIVERING_PACKAGES: set[str] = set()
#: ``outcome`` of ``loopguard.recoveries``
RESOLVED = "resolved"
PERSISTED = "persisted"


@dataclass(slots=True)
class Recommendation:
    """A replan's message, waiting for (or carried by) the run's next model request."""

    run_id: str
    detector: str
    text: str
    decision: Decision


class Deliveries:
    """The per-run mailbox of recommendations and their outcomes; see the module docstring."""

    __slots__ = (
        "_cap",
        "_delivered",
        "_guard",
        "_lock",
        "_warned",
        "waiting",
    )

    def __init__(self, guard: Any) -> None:
        self._guard = guard
        self._cap = max(guard.config.max_runs, 1)
        #: run id -> the message its next model request carries (read without the lock:
        #: an empty dict is how a model call knows, in one test, that nothing waits)
        self.waiting: dict[str, Recommendation] = {}
        #: run id -> detector -> recommendations delivered, outcome not known yet
        self._delivered: OrderedDict[str, dict[str, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._warned = False

    # -- decisions --------------------------------------------------------------------------

    def status(self, decision: Decision) -> str | None:
        """What happens to a decision's recommendation (the decision event's
        ``loopguard.recommendation.delivery``), or None for a decision without one."""
        if decision.action is not Action.REPLAN or not decision.recommendation:
            return None
        guard = self._guard
        if not guard.enforcing or not guard.config.deliver_recommendations:
            return OFF
        return QUEUED if DELIVERING_PACKAGES else NOT_DELIVERED

    def decided(self, decision: Decision, event: Event | None = None) -> None:
        """A decision was made (a monitor listener): queue a replan's recommendation, settle
        what a stop means for the nudges of its run."""
        run_id = decision.run_id
        if run_id is None:
            return
        action = decision.action
        if action is Action.STOP:
            self._stopped(run_id, decision)
            return
        status = self.status(decision)
        if status is None or status == OFF:
            return
        detector = decision.detectors[0] if decision.detectors else "none"
        if status == NOT_DELIVERED:
            self._count(detector, NOT_DELIVERED)
            self._warn_undeliverable(run_id, detector)
            return
        waiting = Recommendation(run_id, detector, decision.recommendation or "", decision)
        with self._lock:
            replaced = self.waiting.get(run_id)
            self.waiting[run_id] = waiting
            if len(self.waiting) > self._cap:
                oldest = next(iter(self.waiting))
                dropped = self.waiting.pop(oldest)
            else:
                dropped = None
        for gone in (replaced, dropped):
            if gone is not None:
                self._count(gone.detector, NOT_DELIVERED)

    def _stopped(self, run_id: str, decision: Decision) -> None:
        with self._lock:
            left = self.waiting.pop(run_id, None)
            delivered = self._delivered.get(run_id)
            persisted = (
                [s.detector for s in decision.reasons if s.kind == AFTER_NUDGE] if delivered else []
            )
            for detector in persisted:
                delivered.pop(detector, None)  # type: ignore[union-attr]
        if left is not None:
            self._count(left.detector, NOT_DELIVERED)
        for detector in persisted:
            self._count(detector, PERSISTED)

    # -- model calls ------------------------------------------------------------------------

    def any_waiting(self) -> bool:
        """Whether any run has a message waiting (the per-call cost when none does)."""
        return bool(self.waiting)

    def peek(self, run_id: str) -> Recommendation | None:
        """The message waiting for ``run_id``, left in place."""
        return self.waiting.get(run_id)

    def take(self, run_id: str) -> Recommendation | None:
        """The message waiting for ``run_id``'s next model request, taken out (it goes
        into one request only), or None."""
        if not self.waiting:
            return None
        with self._lock:
            return self.waiting.pop(run_id, None)

    def delivered(self, recommendation: Recommendation) -> None:
        """The message went into a model request: the ladder counts it."""
        run_id = recommendation.run_id
        with self._lock:
            counts = self._delivered.get(run_id)
            if counts is None:
                counts = self._delivered[run_id] = {}
                if len(self._delivered) > self._cap:
                    self._delivered.popitem(last=False)
            else:
                self._delivered.move_to_end(run_id)
            counts[recommendation.detector] = counts.get(recommendation.detector, 0) + 1
        self._guard.monitor_note_delivered(run_id, recommendation.detector)

    def undelivered(self, recommendation: Recommendation) -> None:
        """A package could not add the message to its request (an unexpected shape)."""
        self._count(recommendation.detector, NOT_DELIVERED)

    # -- run ends ---------------------------------------------------------------------------

    def run_ended(self, run_id: str) -> None:
        """The run ended: its delivered nudges that the ladder never stopped resolved the
        loop; a message still waiting was never delivered."""
        if not self.waiting and not self._delivered:
            return
        with self._lock:
            left = self.waiting.pop(run_id, None)
            delivered = self._delivered.pop(run_id, None)
        if left is not None:
            self._count(left.detector, NOT_DELIVERED)
        for detector in delivered or ():
            self._count(detector, RESOLVED)

    # -- telemetry --------------------------------------------------------------------------

    def _count(self, detector: str, outcome: str) -> None:
        try:
            self._guard.telemetry.record_recovery(detector, outcome)
        except Exception as exc:
            self._guard.telemetry.internal_error("record_recovery", exc)

    def _warn_undeliverable(self, run_id: str, detector: str) -> None:
        if self._warned:
            return
        self._warned = True
        logger.warning(
            "otel-loopguard: enforce mode decided REPLAN for run %s (%s), but nothing in this "
            "process can deliver its recommendation to the model: no otel-loopguard package "
            "of an agent framework (or model SDK) wraps this agent's model calls. The "
            "decision is recorded as not_delivered; a loop that goes on is stopped by its "
            "other evidence. Install the package for the framework to deliver it. "
            "(said once per process)",
            run_id,
            detector,
        )


__all__ = [
    "DELIVERING_PACKAGES",
    "NOT_DELIVERED",
    "OFF",
    "PERSISTED",
    "QUEUED",
    "RESOLVED",
    "Deliveries",
    "Recommendation",
]
