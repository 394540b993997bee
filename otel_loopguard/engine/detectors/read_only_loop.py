"""An agent that only reads: step after step of read_file / grep / list, never acting.

Exploration is fine; exploring forever is a loop that no repetition detector sees,
because every read has different arguments. The guard counts consecutive *steps* whose
tool calls are all read-only (``read_only_tools``, matched by the rule of
:mod:`otel_loopguard.engine.detectors.tool_names`, so ``fs.read_file`` and
``filesystem__read_file`` match ``read_file``; a shell tool of ``shell_tools`` running a
command that only reads, ``cat`` / ``grep`` / ``sed -n`` / ``git diff``, and an editor's
``view``: :mod:`otel_loopguard.engine.detectors.read_only_commands`) and, at
``read_only_loop_threshold`` steps,
recommends acting on what was found. If the agent keeps reading, it fires again at each
further multiple of the threshold, with a higher score.

A step is a model turn: the tool calls after one ``llm_response`` and before the next.
A step is judged when it is complete, that is when the next model turn arrives: a turn
may read and write in parallel, and a nudge to "act" after such a step would be wrong.
The nudge then reaches the model with the results of the turn that just started. If
that new turn answers instead (no requested tool calls and a stop-like finish reason
such as ``stop`` / ``end_turn``, or ``requested_tool_calls == ()``), there is nothing to
nudge. Runs without ``llm_response`` events (only tool spans are traced) count each tool
call as a complete step. Resets: any tool not in the list (a write, a shell command,
...), and a model turn that calls no tool.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Signal
from otel_loopguard.engine.detectors.base import RunCounters, mypyc_attr
from otel_loopguard.engine.detectors.finish_reasons import is_stop
from otel_loopguard.engine.detectors.read_only_commands import (
    command_text,
    is_editor_view,
    is_read_only_command,
)
from otel_loopguard.engine.detectors.state_io import export_dataclass, restore_dataclass
from otel_loopguard.engine.detectors.tool_names import ToolNameMatcher
from otel_loopguard.engine.events import Event, EventKind

NAME = "read_only_loop"

# enum member lookups are slow on the hot path (Python 3.11): bind them once
_TOOL_CALL = EventKind.TOOL_CALL
_LLM_RESPONSE = EventKind.LLM_RESPONSE


@dataclass(slots=True, init=False)
class ReadOnlyState:
    """Complete read-only steps in a row, and what the current step did so far."""

    streak: int = 0
    seen_model_turn: bool = False
    step_tools: int = 0
    step_mutating: bool = False

    # Written out for mypyc, which leaves a generated __init__ interpreted (see Event)
    def __init__(
        self,
        streak: int = 0,
        seen_model_turn: bool = False,
        step_tools: int = 0,
        step_mutating: bool = False,
    ) -> None:
        self.streak = streak
        self.seen_model_turn = seen_model_turn
        self.step_tools = step_tools
        self.step_mutating = step_mutating


@mypyc_attr(allow_interpreted_subclasses=True)
class ReadOnlyLoopDetector:
    """Fires at ``read_only_loop_threshold`` consecutive read-only steps, with a nudge."""

    name: ClassVar[str] = NAME
    event_kinds: ClassVar[frozenset[EventKind]] = frozenset(
        {EventKind.TOOL_CALL, EventKind.LLM_RESPONSE}
    )

    def __init__(self, config: LoopGuardConfig) -> None:
        self._threshold = config.read_only_loop_threshold
        self._read_only = ToolNameMatcher(config.read_only_tools)
        self._shell = ToolNameMatcher(config.shell_tools)

    def _reads_only(self, event: Event) -> bool:
        """A read-only tool, a shell tool running a read-only command, an editor's view."""
        name = event.tool_name
        if self._read_only[name]:
            return True
        arguments = event.arguments
        if arguments is None:
            return False  # content not recorded: nothing says it only reads
        if self._shell[name]:
            return is_read_only_command(command_text(arguments))
        return is_editor_view(name, arguments)

    def new_state(self) -> ReadOnlyState:
        return ReadOnlyState()

    def observe(self, event: Event, state: ReadOnlyState, counters: RunCounters) -> Signal | None:
        kind = event.kind
        if kind is _TOOL_CALL:
            read_only = self._reads_only(event)
            if state.seen_model_turn:
                state.step_tools += 1
                state.step_mutating = state.step_mutating or not read_only
                return None
            if not read_only:  # no model spans: every tool call is a complete step
                state.streak = 0
                return None
            return self._count_step(state)
        if kind is not _LLM_RESPONSE:
            return None
        previous_step_read_only = state.step_tools > 0 and not state.step_mutating
        first_turn = not state.seen_model_turn
        state.seen_model_turn = True
        state.step_tools = 0
        state.step_mutating = False
        if not event.requested_tool_calls and (
            event.requested_tool_calls == () or is_stop(event.finish_reason)
        ):  # the model answered instead of reading on
            state.streak = 0
            return None
        if first_turn:
            return None  # tool calls before any model turn were counted one by one
        if not previous_step_read_only:
            state.streak = 0
            return None
        return self._count_step(state)

    def _count_step(self, state: ReadOnlyState) -> Signal | None:
        state.streak += 1
        if state.streak % self._threshold:
            return None
        return Signal(
            detector=NAME,
            kind=NAME,
            score=min(0.95, 0.4 + 0.2 * (state.streak // self._threshold)),
            message=f"agent has only used read-only tools for {state.streak} steps in a row",
            evidence={"steps": state.streak},
            recommendation=(
                f"You have only read and searched for {state.streak} steps in a row. Act on "
                "what you found: make the change, run the command, or give your answer. "
                "Read more only if something specific is still missing."
            ),
        )

    def export_state(self, state: ReadOnlyState) -> dict[str, Any]:
        return export_dataclass(state)

    def restore_state(self, data: dict[str, Any]) -> ReadOnlyState:
        state = restore_dataclass(ReadOnlyState, data)
        state.streak = max(0, state.streak)
        return state
