"""An empty end-of-turn right after failing tools: the agent gave up without saying so.

A model that ends its turn with nothing to say (no text, no tool call, a stop-like finish
reason) while its last tool calls failed has silently abandoned the task. The repair is to
prompt it to continue or explain; a model that keeps doing it is stuck. Each such end is a
``recovery`` signal with that prompt in :attr:`Signal.recommendation`, up to
``max_premature_end_recoveries``; the next is ``exhausted``.

"The last tool calls" are the results and errors since the model turn before them (a
batch, possibly parallel calls), remembered until the next batch starts. A batch fails
when it has a ``tool_error``, a shell result classified as an environmental failure
(:mod:`otel_loopguard.engine.detectors.shell_failure`), or a result whose output text
carries a failure marker although the call itself succeeded: failing tests (``FAIL:``,
``3 failed``), a traceback, ``AssertionError``, a non-zero exit code
(:mod:`otel_loopguard.engine.detectors.output_failures`; ``OTEL_LOOPGUARD_OUTPUT_FAILURE_MARKERS``,
on by default; results of read-only and note tools are file content or thoughts, not
outcomes, and are not looked into). An empty end after a batch that succeeded (tests that
passed, exit code 0, prose that merely says "error") is a normal end, not a premature one.

The markers are looked for lazily: a result is only remembered (at most
:data:`MAX_PENDING` per batch, references dropped at the next model turn) and classified
when it matters, at an empty end of turn or while re-prompts are counting; a tool span
costs no text scan.

The recovery count resets when the agent shows progress: a batch of tool calls that all
succeeded, or a non-empty final answer (it explained itself, which the prompt asks for).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Signal
from otel_loopguard.engine.detectors.base import RunCounters, mypyc_attr
from otel_loopguard.engine.detectors.call_tracking import is_error_result
from otel_loopguard.engine.detectors.finish_reasons import is_stop
from otel_loopguard.engine.detectors.output_failures import output_failure
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
#: successful results of a batch remembered for their failure markers (the first ones)
MAX_PENDING = 4


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
    # successful results of the open batch not yet looked into for failure markers (not
    # exported: export_state classifies them first)
    pending: tuple[Event, ...] = ()

    # Written out for mypyc, which leaves a generated __init__ interpreted (see Event)
    def __init__(
        self,
        batch_tools: int = 0,
        batch_failures: tuple[str, ...] = (),
        batch_closed: bool = True,
        consecutive: int = 0,
        pending: tuple[Event, ...] = (),
    ) -> None:
        self.batch_tools = batch_tools
        self.batch_failures = batch_failures
        self.batch_closed = batch_closed
        self.consecutive = consecutive
        self.pending = pending


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
        self._markers = config.output_failure_markers
        # results that are file content or a thought, not the outcome of work
        self._content_tools = ToolNameMatcher((*config.read_only_tools, *config.note_tools))

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
        ends_turn = not event.requested_tool_calls and is_stop_like(event.finish_reason)
        if state.pending:
            if state.consecutive or (ends_turn and event.empty):
                self._classify_pending(state)  # only when the answer depends on it
            else:
                state.pending = ()
        if state.batch_tools and not state.batch_failures:
            state.consecutive = 0  # the last batch succeeded: progress
        state.batch_closed = True
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
            state.pending = ()
        state.batch_tools += 1
        if event.kind is not _TOOL_ERROR and not self._shell_tools[event.tool_name]:
            # a result of a tool that is not a shell: a success unless its output says
            # otherwise, looked into only if an empty end of turn follows
            if self._markers and len(state.pending) < MAX_PENDING:
                state.pending = (*state.pending, event)
            return
        failure = _describe_failure(event, self._shell_tools)
        if failure is None and self._markers and event.kind is not _TOOL_ERROR:
            if len(state.pending) < MAX_PENDING:
                state.pending = (*state.pending, event)
            return
        if failure is not None and len(state.batch_failures) < MAX_FAILURES_KEPT:
            state.batch_failures = (*state.batch_failures, failure)

    def _classify_pending(self, state: PrematureEndState) -> None:
        """Move the remembered results whose output carries a failure marker into the
        batch's failures; forget the results."""
        pending, state.pending = state.pending, ()
        failures = state.batch_failures
        for event in pending:
            if len(failures) >= MAX_FAILURES_KEPT:
                break
            tool = event.tool_name
            if is_error_result(event):  # an MCP ``isError`` result: the tool failed
                label: str | None = "error"
            elif self._content_tools[tool]:
                continue
            else:
                details = event.details
                exit_code = details.get("exit_code") if details else None
                label = output_failure(event.output, exit_code)
            if label is not None:
                failures = (*failures, f"{(tool or 'tool')[:60]}: {label}")
        state.batch_failures = failures

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
        if state.pending:
            self._classify_pending(state)  # results are raw content: only their verdict goes
        data = export_dataclass(state)
        data.pop("pending", None)
        return data

    def restore_state(self, data: dict[str, Any]) -> PrematureEndState:
        if isinstance(data, dict) and "pending" in data:
            data = {key: value for key, value in data.items() if key != "pending"}
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
