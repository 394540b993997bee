"""Strands' event-loop cycle span, when our interrupt leaves the cycle.

Strands ends a cycle's ``execute_event_loop_cycle`` span on success and on an ``Exception``
(``event_loop_cycle`` catches ``Exception`` only), so a ``BaseException`` leaving the cycle
(our :class:`~otel_loopguard.LoopGuardInterrupt`, as a ``CancelledError`` would) leaves the
span open forever: never exported, its ``chat`` and ``execute_tool`` children orphaned. Our
wrappers that raise the interrupt out of a cycle (a model call, a tool call) end it the way
Strands ends its own agent span on a ``BaseException``: as cancelled.
"""

from __future__ import annotations

from typing import Any

from otel_loopguard import LoopGuardInterrupt, get_guard


def end_cycle_span(cycle_span: Any, interrupt: LoopGuardInterrupt) -> None:
    """End ``cycle_span`` as Strands ends a span cancelled by a ``BaseException``; an
    ended or non-recording span is left alone. Never raises."""
    try:
        if cycle_span is None or not cycle_span.is_recording():
            return
        from strands.telemetry.tracer import get_tracer

        get_tracer().end_span_with_cancellation(cycle_span, interrupt)
    except Exception as exc:  # never let our bookkeeping break the agent
        get_guard().telemetry.internal_error("strands.cycle_span", exc)
