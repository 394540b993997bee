"""Delivering a ``replan``: the recommendation goes into the run's next model request.

In ``enforce`` mode a replan's recommendation waits in its run's mailbox
(:mod:`otel_loopguard.guard.deliveries`) until a model call of that run takes it. A framework
package supplies one function, ``deliver(call, message) -> bool``: add ``message`` to the
request in ``call`` (a :class:`~otel_loopguard.kit.model_turn.ModelCall`) as an internal user
message the agent did not write, in the framework's and the provider's own format, where
their ordering rules allow it (after the tool results the model asked for, never two user
turns in a row), and return True; False when this request cannot carry it. It must not
change the caller's objects: it replaces ``call.args`` / ``call.kwargs`` with new ones
holding copied message lists, so the framework's own history is left as it was and a
failed delivery leaves the request untouched.

Where the kit runs the call (:func:`~otel_loopguard.kit.model_turn.model_turn_wrapper`,
``deliver=``), it calls :func:`deliver_waiting` after the pre-flight check and makes the
call with the new arguments. A package with its own hook (a stream built from the request,
an SDK's request method) calls :func:`deliver_waiting` itself.

The re-asks of the reference agent loop: an answer cut off at the token limit, or an empty
end of turn after failing tools, on which the framework would end the agent's turn. The
model-turn wrapper (``again=``, ``join=``) then asks the model again at once, with the
continuation prompt or the re-prompt delivered, and returns the joined answer (truncation)
or the new one (premature end), up to the recoveries the detectors allow.

Observe mode never changes a request; nor does ``OTEL_LOOPGUARD_DELIVER_RECOMMENDATIONS=false``
(STOP still interrupts). A ``deliver`` that raises is counted in
``loopguard.internal_errors`` as ``<package>.deliver`` and the request goes as it was. With
nothing waiting in any run the cost per model call is one truthiness test.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from opentelemetry import trace

from otel_loopguard.guard.deliveries import DELIVERING_PACKAGES, Recommendation
from otel_loopguard.guard.run_context import current_run
from otel_loopguard.telemetry import DELIVERED_EVENT, RUN_ID_ATTRIBUTE

if TYPE_CHECKING:  # pragma: no cover
    from otel_loopguard.kit.model_turn import ModelCall

#: ``deliver(call, message)``: put ``message`` into the request (new ``call.args`` /
#: ``call.kwargs``); True when it went in
Deliver = Callable[["ModelCall", str], bool]
#: ``again(call, detector)``: the follow-up request after ``call.result`` (the original
#: request plus that answer), as ``(args, kwargs)``; None when there is none to make
Again = Callable[["ModelCall", str], "tuple[tuple[Any, ...], dict[str, Any]] | None"]
#: ``join(first, second)``: one answer made of a truncated answer and its continuation
Join = Callable[[Any, Any], Any]

#: the detectors whose replan is a re-ask of the same turn
REASK_DETECTORS = frozenset({"truncation", "premature_end"})


def can_deliver(package: str) -> None:
    """``package`` delivers recommendations in this process (said once, when it builds its
    wrappers): replans are queued for the next model request instead of recorded as
    ``not_delivered``."""
    DELIVERING_PACKAGES.add(package)


def deliver_waiting(
    guard: Any, call: ModelCall, deliver: Deliver, package: str, span: Any = None
) -> Recommendation | None:
    """Take the message waiting for the current run (if any) and let ``deliver`` add it to
    ``call``'s request; the delivery is recorded on ``span`` (default: the current span).
    Never raises; returns what was delivered."""
    deliveries = guard.deliveries
    if not deliveries.any_waiting():  # the common case: one test, nothing else
        return None
    try:
        if not guard.enforcing or not guard.config.deliver_recommendations:
            return None
        waiting = deliveries.take(guard.resolve_run(span).run_id)
    except Exception as exc:
        guard.telemetry.internal_error(f"{package}.deliver", exc)
        return None
    if waiting is None:
        return None
    args, kwargs = call.args, call.kwargs
    try:
        delivered = bool(deliver(call, waiting.text))
    except Exception as exc:  # an unexpected request shape: the request goes as it was
        guard.telemetry.internal_error(f"{package}.deliver", exc)
        delivered = False
    if not delivered:
        call.args, call.kwargs = args, kwargs
        deliveries.undelivered(waiting)
        return None
    try:
        deliveries.delivered(waiting)
        _record(waiting, span if span is not None else _current_span())
    except Exception as exc:
        guard.telemetry.internal_error(f"{package}.deliver", exc)
    return waiting


def delivered_arguments(
    guard: Any,
    deliver: Deliver,
    package: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    instance: Any = None,
    span: Any = None,
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The arguments a request hook sends: the caller's ``(args, kwargs)``, or new ones
    carrying the recommendation waiting for the run (:func:`deliver_waiting` for a hook that
    has the request's arguments, not a :class:`ModelCall`). Never raises."""
    if not guard.deliveries.waiting:  # the common case: one test
        return args, kwargs
    from otel_loopguard.kit.model_turn import ModelCall

    call = ModelCall(instance, args, kwargs)
    deliver_waiting(guard, call, deliver, package, span)
    return call.args, call.kwargs


def _current_span() -> Any:
    """The span current at the call, or the current run's agent span where the framework's
    own current span records nothing (a framework making spans without a tracer provider)."""
    span = trace.get_current_span()
    if span.is_recording():
        return span
    handle = current_run()
    return handle.span if handle is not None and handle.span is not None else span


def _record(waiting: Recommendation, span: Any) -> None:
    """The span of the request says which decision it carries (an event, and attributes
    a trace search can filter on)."""
    if not span.is_recording():
        return
    decision = waiting.decision
    attributes = {
        "loopguard.detectors": [waiting.detector],
        "loopguard.action": decision.action.value,
        "loopguard.reason": decision.reason or decision.action.value,
        "loopguard.recommendation": waiting.text,
        RUN_ID_ATTRIBUTE: waiting.run_id,
    }
    span.add_event(DELIVERED_EVENT, attributes)
    span.set_attribute("loopguard.recommendation.detector", waiting.detector)


def reask_request(
    guard: Any, call: ModelCall, again: Again, package: str
) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """After a wrapped model call returned ``call.result``: the follow-up request when the
    answer's report queued a re-ask (a truncation's continuation, a premature end's
    re-prompt) for this run, else None. Never raises."""
    deliveries = guard.deliveries
    if not deliveries.any_waiting():
        return None
    try:
        if not guard.enforcing or not guard.config.deliver_recommendations:
            return None
        waiting = deliveries.peek(guard.resolve_run().run_id)
        if waiting is None or waiting.detector not in REASK_DETECTORS:
            return None
        return again(call, waiting.detector)
    except Exception as exc:
        guard.telemetry.internal_error(f"{package}.again", exc)
        return None


def waiting_detector(guard: Any, package: str = "kit") -> str | None:
    """The detector of the recommendation waiting for the current run, in ``enforce`` mode
    with delivery on (what kind of re-ask an answer's report queued), or None. Nothing
    waiting anywhere costs one test; never raises."""
    deliveries = guard.deliveries
    if not deliveries.waiting:
        return None
    try:
        if not guard.enforcing or not guard.config.deliver_recommendations:
            return None
        waiting = deliveries.peek(guard.resolve_run().run_id)
    except Exception as exc:
        guard.telemetry.internal_error(f"{package}.again", exc)
        return None
    return waiting.detector if waiting is not None else None


def combined_answer(
    guard: Any, package: str, join: Join | None, first: Any, second: Any, detector: str | None
) -> Any:
    """What the framework gets after a re-ask: a truncated answer joined with its
    continuation (``join``), or the re-prompted answer in place of the empty one. A
    ``join`` that raises is counted as ``<package>.join`` and the continuation goes alone."""
    if first is None or join is None or detector != "truncation":
        return second
    try:
        return join(first, second)
    except Exception as exc:  # an answer shape the package does not know
        guard.telemetry.internal_error(f"{package}.join", exc)
        return second


def reasks_allowed(guard: Any) -> int:
    """An upper bound on re-asks of one turn (the detectors stop asking before)."""
    config = guard.config
    return int(config.max_tokens_recoveries) + int(config.max_premature_end_recoveries) + 1


__all__ = [
    "REASK_DETECTORS",
    "Again",
    "Deliver",
    "Join",
    "can_deliver",
    "combined_answer",
    "deliver_waiting",
    "reask_request",
    "reasks_allowed",
    "waiting_detector",
]
