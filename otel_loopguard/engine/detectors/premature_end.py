"""An empty end-of-turn right after failing tools: the agent gave up without saying so.

A model that ends its turn with nothing to say (no text, no tool call, a stop-like finish
reason) while its last tool calls failed has silently abandoned the task. The repair is to
prompt it to continue or explain; a model that keeps doing it is stuck. Each such end is a
``recovery`` signal with that prompt in :attr:`Signal.recommendation`, up to
``max_premature_end_recoveries``; the next is ``exhausted``.

"The last tool calls" are the results and errors since the model turn before them (a
batch, possibly parallel calls), remembered until the next batch starts. A batch fails
when it has a ``tool_error`` or a shell result classified as an environmental failure
(:mod:`otel_loopguard.engine.detectors.shell_failure`). An empty end after a batch that succeeded
is a normal end, not a premature one.

The recovery count resets when the agent shows progress: a batch of tool calls that all
succeeded, or a non-empty final answer (it explained itself, which the prompt asks for).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Signal
from otel_loopguard.engine.detectors.base import RunCounters, mypyc_attr
from otel_loopguard.engine.detectors.finish_reasons import is_stop
from otel_loopguard.engine.detectors.recoveries import recovery_or_exhausted
from otel_loopguard.engine.detectors.shell_failure import HINTS, classify_shell_failure
from otel_loopguard.engine.detectors.state_io import export_dataclass, restore_dataclass
from otel_loopguard.engine.detectors.tool_names import ToolNameMatcher
from otel_loopguard.engine.events import Event, EventKind

NAME = "premature_end"

# enum member lookups are slow on the hot path (Python 3.11): bind them once
_TOOL_RESULT = EventKind.TOOL_RESULT
_TOOL_ERROR = EventKind.TOOL_ERROR
_LLM_RESPONSE = EventKind.LLM_RESPONSE

MAX_FAILURES_KEPT = 4


def is_stop_like(finish_reason: str | None) -> bool:
    """A finish that means "the model chose to end" (unknown counts: many spans omit it)."""
    return finish_reason is None or is_stop(finish_reason)


@dataclass(slots=True, init=False)
class PrematureEndState:
    """The latest tool batch (its failures, summarised) and premature ends in a row."""

    batch_tools: int = 0
    batch_failures: tuple[str, ...] = ()
    batch_closed: bool = True  # a model turn came after it; the next tool event starts anew
    consecutive: int = 0

    # Written out for mypyc, which leaves a generated __init__ interpreted (see Event)
    def __init__(
        self,
        batch_tools: int = 0,
        batch_failures: tuple[str, ...] = (),
        batch_closed: bool = True,
        consecutive: int = 0,
    ) -> None:
        self.batch_tools = batch_tools
        self.batch_failures = batch_failures
        self.batch_closed = batch_closed
        self.consecutive = consecutive


@mypyc_attr(allow_interpreted_subclasses=True)
class PrematureEndDetector:
    """``recovery`` for empty end-turns after failing tools, then ``exhausted``."""

    name: ClassVar[str] = NAME
    event_kinds: ClassVar[frozenset[EventKind]] = frozenset(
        {EventKind.TOOL_RESULT, EventKind.TOOL_ERROR, EventKind.LLM_RESPONSE}
    )

    def __init__(self, config: LoopGuardConfig) -> None:
        self._recoveries = config.max_premature_end_recoveries
        self._shell_tools = ToolNameMatcher(config.shell_tools)

    def new_state(self) -> PrematureEndState:
        return PrematureEndState()

    def observe(
        self, event: Event, state: PrematureEndState, counters: RunCounters
    ) -> Signal | None:
        kind = event.kind
        if kind is _TOOL_RESULT or kind is _TOOL_ERROR:
            self._record_tool_outcome(event, state)
            return None
        if kind is not _LLM_RESPONSE:
            return None
        if state.batch_tools and not state.batch_failures:
            state.consecutive = 0  # the last batch succeeded: progress
        state.batch_closed = True
        ends_turn = not event.requested_tool_calls and is_stop_like(event.finish_reason)
        if not ends_turn:
            return None
        if not event.empty:
            state.consecutive = 0  # a final answer: the model explained itself
            return None
        if not state.batch_failures:
            return None
        state.consecutive += 1
        return self._signal(state)

    def _record_tool_outcome(self, event: Event, state: PrematureEndState) -> None:
        if state.batch_closed:
            state.batch_closed = False
            state.batch_tools = 0
            state.batch_failures = ()
        state.batch_tools += 1
        if event.kind is not _TOOL_ERROR and not self._shell_tools[event.tool_name]:
            return  # a result of a tool that is not a shell: a success (the common case)
        failure = _describe_failure(event, self._shell_tools)
        if failure is not None and len(state.batch_failures) < MAX_FAILURES_KEPT:
            state.batch_failures = (*state.batch_failures, failure)

    def _signal(self, state: PrematureEndState) -> Signal:
        failed = ", ".join(state.batch_failures)
        evidence = {
            "failed_tools": list(state.batch_failures),
            "premature_ends": state.consecutive,
            "max_recoveries": self._recoveries,
        }
        return recovery_or_exhausted(
            NAME,
            "model ended its turn empty after failing tool calls",
            state.consecutive,
            self._recoveries,
            "re-prompt",
            evidence,
            recommendation=(
                "You ended your turn without completing the task while the last tool "
                f"calls failed: {failed}. Continue with the task (fix the cause or try "
                "another approach), or explain why it cannot be completed."
            ),
            detail=f" ({failed})",
        )

    def export_state(self, state: PrematureEndState) -> dict[str, Any]:
        return export_dataclass(state)

    def restore_state(self, data: dict[str, Any]) -> PrematureEndState:
        state = restore_dataclass(PrematureEndState, data)
        state.batch_failures = tuple(f[:100] for f in state.batch_failures[:MAX_FAILURES_KEPT])
        return state


def _describe_failure(event: Event, shell_tools: ToolNameMatcher) -> str | None:
    """``tool: what went wrong`` without raw content (error type, status, failure class)."""
    if event.kind is _TOOL_ERROR:
        tool = (event.tool_name or "tool")[:60]
        error = event.error
        if error is not None and error.type:
            # the class name without its module (the SDK records ``exception.type``
            # qualified: ``requests.exceptions.ConnectionError``)
            return f"{tool}: {error.type.rsplit('.', 1)[-1][:40]}"
        if error is not None and error.status_code is not None:
            return f"{tool}: status {error.status_code}"
        return f"{tool}: error"
    if shell_tools[event.tool_name]:
        failure = classify_shell_failure(event)
        if failure is not None:
            return f"{(event.tool_name or '')[:60]}: {HINTS[failure.failure_class][0]}"
    return None
