"""Action cycle: a periodic pattern of steps, A → B → A → B or A → B → C → A → B → C.

A *step* is one answered tool call: its call signature together with its output signature
(or error signature), added when the result or error arrives. A cycle of period ``p``
(2..``cycle_max_period``) is ``cycle_min_periods`` full periods of identical steps in a
row. Because outputs are part of the step, polling whose answers change and
edit → test → edit → test with different edits never form a cycle: the whole period must be
identical, calls and answers. Period 1 (the same step again and again) is the repetition
and no-progress detectors' job.

O(1) per step: for every period ``p`` the detector keeps ``match[p]``, the number of latest
steps equal to the step ``p`` places earlier, and a ring of the last ``cycle_max_period``
steps. A cycle of period ``p`` with ``k`` full periods exists when
``match[p] >= (k - 1) * p``. It fires when the minimum is reached and again at every further
full period, with a score growing with the number of periods.
"""

from __future__ import annotations

from typing import Any, ClassVar

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Signal
from otel_loopguard.engine.detectors.base import RunCounters, mypyc_attr
from otel_loopguard.engine.detectors.call_tracking import growing_score
from otel_loopguard.engine.events import Event, EventKind

# Enum members as module constants for the per-event comparisons (see call_tracking).
_TOOL_ERROR = EventKind.TOOL_ERROR
_TOOL_RESULT = EventKind.TOOL_RESULT


class ActionCycleState:
    __slots__ = ("match", "steps", "tools")

    def __init__(self, max_period: int) -> None:
        # a step: call fingerprint, output (or error) fingerprint and failure flag in one int
        # (short lists, not deques: a deque allocates a 64-slot block)
        self.steps: list[int] = []
        self.tools: list[str] = []
        self.match = [0] * (max_period + 1)  # index = period; 0 and 1 unused


@mypyc_attr(allow_interpreted_subclasses=True)
class ActionCycleDetector:
    """Periodic identical steps with period 2..cycle_max_period."""

    name: ClassVar[str] = "action_cycle"
    # the monitor calls us for these only (it pairs results with their calls itself)
    event_kinds: ClassVar[frozenset[EventKind]] = frozenset(
        {EventKind.TOOL_RESULT, EventKind.TOOL_ERROR}
    )

    def __init__(self, config: LoopGuardConfig) -> None:
        self.max_period = config.cycle_max_period
        self.min_periods = config.cycle_min_periods
        self._periods = range(2, self.max_period + 1)
        # matched steps a cycle of each period needs: (min_periods - 1) full periods
        self._needed = [(self.min_periods - 1) * period for period in range(self.max_period + 1)]

    def new_state(self) -> ActionCycleState:
        return ActionCycleState(self.max_period)

    def observe(
        self, event: Event, state: ActionCycleState, counters: RunCounters
    ) -> Signal | None:
        kind = event.kind
        if kind is not _TOOL_RESULT and kind is not _TOOL_ERROR:
            return None
        call = counters.call_key
        if not call:
            return None
        step = (call << 33) | (counters.outcome_key << 1) | counters.failed
        return self._add_step(step, event.tool_name or "?", state)

    def _add_step(self, step: int, tool: str, state: ActionCycleState) -> Signal | None:
        steps, match = state.steps, state.match
        size = len(steps)
        # one pass updates the match counts and notes whether any period has reached the
        # length of a cycle; most steps are not part of one and skip the second pass
        candidate = False
        for period in self._periods:
            if size >= period and steps[size - period] == step:
                matched = match[period] + 1
                match[period] = matched
                if matched >= self._needed[period]:
                    candidate = True
            else:
                match[period] = 0
        steps.append(step)
        state.tools.append(tool)
        if size >= self.max_period:
            del steps[0], state.tools[0]
        if not candidate:
            return None
        for period in self._periods:
            needed = self._needed[period]
            matched = match[period]
            if matched < needed or (matched - needed) % period:
                continue
            if self._reducible(period, match, state):
                continue
            periods = matched // period + 1
            tools = state.tools[-period:]
            return Signal(
                detector=self.name,
                kind=self.name,
                score=growing_score(periods, self.min_periods, 0.55),
                message=(
                    f"cycle of {period} calls ({' → '.join(tools)}) repeated {periods} times "
                    "with unchanged results"
                ),
                evidence={
                    "period": period,
                    "periods": periods,
                    "threshold": self.min_periods,
                    "tools": tools,
                },
            )
        return None

    @staticmethod
    def _reducible(period: int, match: list[int], state: ActionCycleState) -> bool:
        """True when the pattern is really a shorter one (A A A A, or ABAB seen as period 4)."""
        last = state.steps[-period:]
        if len(set(last)) == 1:
            return True
        return any(
            period % shorter == 0 and match[shorter] >= period for shorter in range(2, period)
        )

    def export_state(self, state: ActionCycleState) -> dict[str, Any]:
        return {
            "steps": list(state.steps),
            "tools": list(state.tools),
            "match": state.match[2:],
        }

    def restore_state(self, data: dict[str, Any]) -> ActionCycleState:
        state = ActionCycleState(self.max_period)
        state.steps = [int(step) for step in data.get("steps") or []][-self.max_period :]
        state.tools = [str(tool) for tool in data.get("tools") or []][-self.max_period :]
        saved = [int(value) for value in data.get("match") or []]
        for period in range(2, self.max_period + 1):
            if period - 2 < len(saved):
                state.match[period] = saved[period - 2]
        return state
