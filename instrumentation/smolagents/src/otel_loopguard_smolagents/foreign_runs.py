"""Another instrumentation's run span, left consistent when our interrupt ends a run.

OpenInference's smolagents instrumentation (``openinference-instrumentation-smolagents``,
0.1.43 here) wraps ``MultiStepAgent.run``: it starts an ``<Agent>.run`` span, attaches its
context, and for a plain (not streamed) run ends the span and detaches the context after the
call returned or raised an ``Exception``. :class:`~otel_loopguard.LoopGuardInterrupt` is a
``BaseException`` (so that the agent's own error handling cannot swallow it), and it passes
that wrapper: their span is never ended (never exported) and their context stays attached,
so the caller's next ``run`` starts inside the previous run's trace.

Our ``run`` wrapper puts that right for the plain run, whichever of the two wrappers is
outside the other (the one instrumented last is):

* ours outside theirs: after the interrupt passed their wrapper, their span is the current
  one; it is ended (status error, ``error.type=LoopGuardInterrupt``) and the context our
  wrapper found is attached again, exactly the caller's;
* ours inside theirs: their span is the current one when the interrupt passes ours; it is
  ended, and a context with its parent as the current span is attached (the caller's own
  span object cannot be recovered from its context: a later span still gets the right trace
  and parent, but ``trace.get_current_span()`` is a non-recording stand-in for it until the
  caller's own ``with`` block ends, which restores its context exactly).

A streamed run (``run(stream=True)``) needs nothing: their generator wrapper ends the span and
detaches in ``finally``. Only the scopes named in :data:`ENDS_ONLY_ON_EXCEPTION` are touched:
another instrumentation's span is never ended by us on a guess.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import INVALID_SPAN, NonRecordingSpan, Status, StatusCode

from otel_loopguard import LoopGuardInterrupt, get_guard

#: instrumentation scopes whose ``run`` span an interrupt leaves open and attached
ENDS_ONLY_ON_EXCEPTION = frozenset({"openinference.instrumentation.smolagents"})


def run_wrapper(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Wrap ``MultiStepAgent.run``: a plain run's interrupt leaves a foreign run span
    ended and its context detached (module docstring)."""
    if kwargs.get("stream") or (len(args) > 1 and args[1]):
        return wrapped(*args, **kwargs)  # run(task, stream=True): their generator ends it
    entry = otel_context.get_current()
    around = trace.get_current_span()
    try:
        return wrapped(*args, **kwargs)
    except LoopGuardInterrupt:
        try:
            _leave_consistent(entry, around)
        except Exception as error:  # never let our bookkeeping replace the interrupt
            get_guard().telemetry.internal_error("smolagents.foreign_run", error)
        raise


def _leave_consistent(entry: Any, around: Any) -> None:
    current = trace.get_current_span()
    if not _left_open(current):
        return
    _end_interrupted(current)
    if current is not around:  # ours is outside theirs: the caller's context, exactly
        otel_context.attach(entry)
        return
    parent = getattr(current, "parent", None)
    stand_in = NonRecordingSpan(parent) if parent is not None else INVALID_SPAN
    otel_context.attach(trace.set_span_in_context(stand_in, otel_context.get_current()))


def _left_open(span: Any) -> bool:
    """A recording span of a scope whose wrapper does not end it on a ``BaseException``."""
    if not span.is_recording():
        return False
    scope = getattr(span, "instrumentation_scope", None)
    return scope is not None and scope.name in ENDS_ONLY_ON_EXCEPTION


def _end_interrupted(span: Any) -> None:
    span.set_attribute("error.type", "LoopGuardInterrupt")
    span.set_status(Status(StatusCode.ERROR, "interrupted by otel-loopguard"))
    span.end()
