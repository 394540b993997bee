"""When a decision was taken, counted in the spans of the run: what the compat suites
check ("a STOP within the 4th call", "the budget STOP with the 3rd turn").

A decision's event names the span it was read from (``Event.span_id``, hex): the tool
span whose result proved the loop, the model span whose usage went over the budget. Its
position among the run's spans of that kind, in start order, is the call or turn it came
with. Span ids, not times: an event's float timestamp rounds nanoseconds away."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def first_stop(harness: Any, detector: str | None = None) -> Any | None:
    """The event of the first STOP the guard took (by ``detector``), or None."""
    for decision, event in harness.decided:
        if decision.action.value == "stop" and (detector is None or detector in decision.detectors):
            return event
    return None


def position(spans: Iterable[Any], event: Any) -> int | None:
    """1 + the index, in start order, of the span ``event`` was read from (None: not
    among ``spans``)."""
    ordered = sorted(spans, key=lambda span: span.start_time)
    for index, span in enumerate(ordered):
        if format(span.context.span_id, "016x") == event.span_id:
            return index + 1
    return None


def stopped_at(harness: Any, spans: Iterable[Any], detector: str | None = None) -> int | None:
    """The position (:func:`position`) of the first STOP among ``spans``; None: no STOP."""
    event = first_stop(harness, detector)
    return None if event is None else position(spans, event)


def calls_before_stop(
    harness: Any, calls: Iterable[Any], detector: str | None = None
) -> int | None:
    """How many of ``calls`` (tool spans) had ended when the first STOP was decided, on
    whichever span it was read from (a tool's result, or the model's next request for the
    same call); None: no STOP, or its span is not among the harness's."""
    event = first_stop(harness, detector)
    if event is None:
        return None
    decided_on = [
        span for span in harness.spans() if format(span.context.span_id, "016x") == event.span_id
    ]
    if not decided_on:
        return None
    end = decided_on[0].end_time
    return sum(1 for span in calls if span.end_time <= end)


def stops(harness: Any) -> list[tuple[Any, Any]]:
    """Every STOP the guard took, as ``(decision, event)``, in order."""
    return [(d, e) for d, e in harness.decided if d.action.value == "stop"]
