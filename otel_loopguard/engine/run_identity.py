"""Run identity: how a run is keyed, when it ends, and the state it ends in.

A run is what detector state accumulates over. First match wins (DESIGN "Core vocabulary"):

* ``conversation``: the ``gen_ai.conversation.id`` (or ``session.id``) of the span or its
  trace, so a session reloaded in a new trace keeps its counters. It outlives its traces
  and ends when idle past ``OTEL_LOOPGUARD_RUN_TTL`` (the monitor's TTL; replay measures it
  in trace time);
* ``root``: the outermost open ``invoke_agent`` / ``invoke_workflow`` span of the trace
  (run id ``"{trace_id}:{span_id}"``); the run ends when that span ends;
* ``trace``: the trace id; the run ends when the trace's local root span ends;
* ``standalone``: gated calls made outside any run and any parent span (no ``agent_run``,
  with or without an SDK), per thread or asyncio task, until an idle gap
  (``otel_loopguard.guard.standalone_runs``); the run ends when idle past the run TTL.

Each rule lives here once, on :class:`RunKey`; the span follower (on-line and in replay)
and the guard ask it instead of comparing strings.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from otel_loopguard.engine.decisions import LoopGuardInterrupt, RunEndState


class RunKey(str, enum.Enum):
    """What a run is keyed by (a ``str``: ``RunKey.ROOT == "root"``)."""

    CONVERSATION = "conversation"
    ROOT = "root"
    TRACE = "trace"
    STANDALONE = "standalone"

    @property
    def ends_with_root_span(self) -> bool:
        """The run ends when its outermost agent/workflow span ends."""
        return self is RunKey.ROOT

    @property
    def ends_with_trace(self) -> bool:
        """The run ends when the trace's local root span ends."""
        return self is RunKey.TRACE

    @property
    def ends_when_idle(self) -> bool:
        """The run outlives its traces and ends when idle past the run TTL."""
        return self is RunKey.CONVERSATION or self is RunKey.STANDALONE


CONVERSATION, ROOT, TRACE = RunKey.CONVERSATION, RunKey.ROOT, RunKey.TRACE
STANDALONE = RunKey.STANDALONE


@dataclass(frozen=True, slots=True)
class RunIdentity:
    """Which run a span belongs to, and what the run is keyed by."""

    run_id: str
    keyed_by: RunKey


def run_identity(
    trace_id: str,
    *,
    conversation: str | None = None,
    root_span_id: str | None = None,
) -> RunIdentity:
    """Run identity, first match wins: conversation id, outermost agent/workflow span, trace.

    ``root_span_id`` is the span id (hex) of the outermost agent/workflow span of the trace
    that encloses the span (the follower tracks the open ones, on-line and in replay).
    """
    if conversation:
        return RunIdentity(conversation, CONVERSATION)
    if root_span_id:
        return RunIdentity(f"{trace_id}:{root_span_id}", ROOT)
    return RunIdentity(trace_id, TRACE)


def as_run_key(value: Any) -> RunKey:
    """A ``keyed_by`` value (a :class:`RunKey` or its text) as a :class:`RunKey`; an
    unknown value counts as ``root`` (a run that ends with its span)."""
    if value.__class__ is RunKey:
        return value  # type: ignore[no-any-return]
    try:
        return RunKey(value)
    except ValueError:
        return ROOT


def end_state(
    summary: Any = None,
    *,
    error: bool = False,
    exception: BaseException | None = None,
    override: RunEndState | None = None,
) -> RunEndState:
    """The one rule for the state a run ends in (``loopguard.run.state``).

    ``override`` (a framework's own outcome: ``max_steps``, ``cancelled``...) wins; then an
    interrupt's decision; then a STOP the run reached (its decision's end state, e.g.
    ``budget_exceeded``, else ``stopped``); then the exception that ended the run
    (cancellation, timeout, other error) or an error status (``error``); else
    ``completed``. ``summary`` is the monitor's ``RunSummary`` (or ``None``).
    """
    if override is not None:
        return override
    if isinstance(exception, LoopGuardInterrupt):
        found = exception.decision.end_state
        return found if found is not None else RunEndState.STOPPED
    if exception is not None:
        return _exception_state(exception)
    if summary is not None and summary.stopped:
        first = summary.first_stop
        stop = first.decision if first is not None else None
        found = stop.end_state if stop is not None else None
        return found if found is not None else RunEndState.STOPPED
    return RunEndState.ERROR if error else RunEndState.COMPLETED


def _exception_state(exception: BaseException) -> RunEndState:
    import asyncio

    if isinstance(exception, (asyncio.CancelledError, KeyboardInterrupt, GeneratorExit)):
        return RunEndState.CANCELLED
    if isinstance(exception, TimeoutError):
        return RunEndState.TIMED_OUT
    return RunEndState.ERROR
