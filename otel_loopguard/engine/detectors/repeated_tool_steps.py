"""Repeated tool steps: consecutive model turns asking for the identical set of tool calls.

The hard guard of an agent loop: when the model's turn requests exactly the same tool calls
(same signatures, order-free) as its previous turn, ``max_repeated_tool_steps`` times in a
row, the agent is stuck whatever the tools return. A turn without tool calls resets the
count.

Sources differ in what they show:

* ``llm_response`` events with ``requested_tool_calls`` (GenAI output messages, our
  wrappers): the step is that set, and the signal comes with the response that repeats it.
* Only tool spans, no requested calls on the model responses: the ``tool_call`` events
  between two ``llm_response`` events form the step (the tools run after a response belong
  to it); the step is closed, and the signal raised, at the next ``llm_response``. Once a
  run has shown requested calls, this fallback is off for it.
* No ``llm_response`` at all: there are no turns to compare; repetition and action-cycle
  detection cover such sources.
"""

from __future__ import annotations

from typing import Any, ClassVar

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Signal
from otel_loopguard.engine.detectors.base import RunCounters, mypyc_attr
from otel_loopguard.engine.detectors.call_tracking import growing_score
from otel_loopguard.engine.events import Event, EventKind
from otel_loopguard.engine.signatures import combine_signatures

MAX_STEP_CALLS = 64  # distinct calls remembered for one fallback step


# Enum members as module constants for the per-event comparisons (see call_tracking).
_LLM_RESPONSE = EventKind.LLM_RESPONSE
_TOOL_CALL = EventKind.TOOL_CALL


class RepeatedToolStepsState:
    __slots__ = ("group", "last_step", "last_tools", "streak", "uses_requested")

    def __init__(self) -> None:
        self.last_step = ""
        self.last_tools: list[str] = []
        self.streak = 0
        self.uses_requested = False
        self.group: dict[str, str] = {}  # fallback step being collected: signature -> tool


@mypyc_attr(allow_interpreted_subclasses=True)
class RepeatedToolStepsDetector:
    """Identical tool-call sets in consecutive model turns."""

    name: ClassVar[str] = "repeated_tool_steps"
    # the monitor calls us for these only
    event_kinds: ClassVar[frozenset[EventKind]] = frozenset(
        {EventKind.TOOL_CALL, EventKind.LLM_RESPONSE}
    )

    def __init__(self, config: LoopGuardConfig) -> None:
        self.threshold = config.max_repeated_tool_steps

    def new_state(self) -> RepeatedToolStepsState:
        return RepeatedToolStepsState()

    def observe(
        self, event: Event, state: RepeatedToolStepsState, counters: RunCounters
    ) -> Signal | None:
        kind = event.kind
        if kind == _TOOL_CALL:
            if not state.uses_requested and len(state.group) < MAX_STEP_CALLS:
                state.group[event.signature] = event.tool_name or "?"
            return None
        if kind != _LLM_RESPONSE:
            return None
        requested = event.requested_tool_calls
        if requested is not None:
            state.uses_requested = True
            state.group.clear()
            return self._step(tuple(requested), [], state)
        if state.uses_requested:
            return None  # this response says nothing about its tool calls
        calls, tools = tuple(state.group), sorted(set(state.group.values()))
        state.group.clear()
        return self._step(calls, tools, state)

    def _step(
        self, calls: tuple[str, ...], tools: list[str], state: RepeatedToolStepsState
    ) -> Signal | None:
        if not calls:
            state.last_step, state.last_tools, state.streak = "", [], 0
            return None
        unique = set(calls)  # a set of calls: order and duplicates do not matter
        step = next(iter(unique)) if len(unique) == 1 else combine_signatures(unique)
        if step == state.last_step:
            state.streak += 1
        else:
            state.last_step, state.last_tools, state.streak = step, tools, 1
        if state.streak < self.threshold:
            return None
        what = ", ".join(state.last_tools) if state.last_tools else f"{len(set(calls))} calls"
        return Signal(
            detector=self.name,
            kind=self.name,
            score=growing_score(state.streak, self.threshold, 0.6),
            message=(
                f"{state.streak} consecutive model turns requested the same tool calls ({what})"
            ),
            evidence={
                "steps": state.streak,
                "threshold": self.threshold,
                "calls": len(set(calls)),
                "tools": state.last_tools,
                "step_signature": step,
            },
        )

    def export_state(self, state: RepeatedToolStepsState) -> dict[str, Any]:
        return {
            "last": state.last_step,
            "tools": state.last_tools,
            "streak": state.streak,
            "uses_requested": state.uses_requested,
            "group": [[call, tool] for call, tool in state.group.items()],
        }

    def restore_state(self, data: dict[str, Any]) -> RepeatedToolStepsState:
        state = RepeatedToolStepsState()
        state.last_step = str(data.get("last") or "")
        state.last_tools = [str(tool) for tool in data.get("tools") or []]
        state.streak = int(data.get("streak") or 0)
        state.uses_requested = bool(data.get("uses_requested"))
        for call, tool in (data.get("group") or [])[:MAX_STEP_CALLS]:
            state.group[str(call)] = str(tool)
        return state
