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

A cycle is its own no-progress evidence: every call of the period was answered as before,
with only the cycle's own calls in between. So its signal carries ``unchanged_outputs`` (the
answers that repeated, ``(periods - 1) * period``) and the default policy stops on it after
``cycle_min_periods`` full periods (two by default: three listing tools each returning
``[]`` twice round), without waiting for one call's third identical answer. Not when the
cycle waits (a wait tool, a shell command that sleeps, :mod:`.waiting`, or
:data:`~otel_loopguard.engine.detectors.waiting.WAIT_SECONDS` between two of its steps):
polling between waits gets the no-progress detector's patience instead. Nor when a tool of
the cycle made a handoff (a ``handoff`` event named it: ``transfer_to_billing_agent``):
agents handing a task around are the handoff-cycle detector's, at the run's level.

A new user message is new information (``cycle_user_message_resets``, on by default): the
cycle's count starts afresh, so an airline agent that searches the same two flights again
after the customer changed something is not taken for a loop. The detector sees one where
it is recorded: a model request that ends with a user's message it had not seen (the
``user_message`` hash of an ``llm_response``, read from ``gen_ai.input.messages``,
OpenInference's ``llm.input_messages``, OpenLLMetry's ``gen_ai.prompt``; a message after
tool results, such as a delivered recommendation, is not a user's), or, where inputs are
not recorded, a model turn that answered with text and no tool call (the end of the
agent's turn: a run that goes on after it got new input). The same failing call with the
same error after every user message stays a loop: the no-progress and permanent-failure
detectors count it across user messages.
"""

from __future__ import annotations

from typing import Any, ClassVar

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Signal
from otel_loopguard.engine.detectors.base import RunCounters, mypyc_attr
from otel_loopguard.engine.detectors.call_tracking import growing_score
from otel_loopguard.engine.detectors.user_turns import new_user_turn
from otel_loopguard.engine.detectors.waiting import WAIT_SECONDS, WaitRule
from otel_loopguard.engine.events import Event, EventKind

# Enum members as module constants for the per-event comparisons (see call_tracking).
_TOOL_CALL = EventKind.TOOL_CALL
_TOOL_ERROR = EventKind.TOOL_ERROR
_TOOL_RESULT = EventKind.TOOL_RESULT
_HANDOFF = EventKind.HANDOFF
_LLM_RESPONSE = EventKind.LLM_RESPONSE
SLEEPING_CALLS_CAP = 16  # calls in flight whose shell command sleeps
HANDOFF_TOOLS_CAP = 8  # tools seen making a handoff


class ActionCycleState:
    __slots__ = (
        "handoff_tools",
        "last_time",
        "match",
        "sleeping",
        "steps",
        "tools",
        "user",
        "waited",
    )

    def __init__(self, max_period: int) -> None:
        # a step: call fingerprint, output (or error) fingerprint and failure flag in one int
        # (short lists, not deques: a deque allocates a 64-slot block)
        self.steps: list[int] = []
        self.tools: list[str] = []
        self.waited = 0  # bit i: the step i places back waited (or came long after the one before)
        self.match = [0] * (max_period + 1)  # index = period; 0 and 1 unused
        self.sleeping: tuple[int, ...] = ()  # calls whose shell command sleeps (rare)
        self.handoff_tools: tuple[str, ...] = ()  # tools that made a handoff (rare)
        self.last_time = 0.0
        self.user = 0  # hash of the last user message seen (0: none)


@mypyc_attr(allow_interpreted_subclasses=True)
class ActionCycleDetector:
    """Periodic identical steps with period 2..cycle_max_period."""

    name: ClassVar[str] = "action_cycle"
    # the monitor calls us for these only (it pairs results with their calls itself)
    event_kinds: ClassVar[frozenset[EventKind]] = frozenset(
        {
            EventKind.TOOL_CALL,
            EventKind.TOOL_RESULT,
            EventKind.TOOL_ERROR,
            EventKind.HANDOFF,
            EventKind.LLM_RESPONSE,
        }
    )

    def __init__(self, config: LoopGuardConfig) -> None:
        self._wait = WaitRule(config)
        self.max_period = config.cycle_max_period
        self._waited_mask = (1 << 2 * self.max_period) - 1  # two periods of the longest
        self.min_periods = config.cycle_min_periods
        self._periods = range(2, self.max_period + 1)
        # matched steps a cycle of each period needs: (min_periods - 1) full periods
        self._needed = [(self.min_periods - 1) * period for period in range(self.max_period + 1)]
        self.user_resets = config.cycle_user_message_resets

    def new_state(self) -> ActionCycleState:
        return ActionCycleState(self.max_period)

    def observe(
        self, event: Event, state: ActionCycleState, counters: RunCounters
    ) -> Signal | None:
        kind = event.kind
        if kind is _TOOL_CALL:
            if counters.call_key and self._wait.command_waits(event.tool_name, event.arguments):
                state.sleeping = (*state.sleeping, counters.call_key)[-SLEEPING_CALLS_CAP:]
            return None
        if kind is _LLM_RESPONSE:
            if not self.user_resets:
                return None
            new, state.user = new_user_turn(event, state.user)
            if new and state.steps:
                state.steps.clear()
                state.tools.clear()
                state.match = [0] * (self.max_period + 1)
                state.waited = 0
            return None
        if kind is _HANDOFF:
            tool = event.tool_name
            if tool and tool not in state.handoff_tools:
                state.handoff_tools = (*state.handoff_tools, tool)[-HANDOFF_TOOLS_CAP:]
            return None
        if kind is not _TOOL_RESULT and kind is not _TOOL_ERROR:
            return None
        call = counters.call_key
        if not call:
            return None
        step = (call << 33) | (counters.outcome_key << 1) | counters.failed
        waited = self._wait.tool_waits(event.tool_name) or call in state.sleeping
        if state.last_time and counters.now - state.last_time >= WAIT_SECONDS:
            waited = True
        state.last_time = counters.now
        return self._add_step(step, event.tool_name or "?", waited, state)

    def _add_step(
        self, step: int, tool: str, waited: bool, state: ActionCycleState
    ) -> Signal | None:
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
        state.waited = ((state.waited << 1) | waited) & self._waited_mask
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
            evidence: dict[str, Any] = {
                "period": period,
                "periods": periods,
                "threshold": self.min_periods,
                "tools": tools,
            }
            handoffs = state.handoff_tools
            if not state.waited & ((1 << 2 * period) - 1) and not (
                handoffs and any(tool in handoffs for tool in tools)
            ):  # no wait in the last two periods, no handoff tool in the cycle
                evidence["unchanged_outputs"] = (periods - 1) * period
            return Signal(
                detector=self.name,
                kind=self.name,
                score=growing_score(periods, self.min_periods, 0.55),
                message=(
                    f"cycle of {period} calls ({' → '.join(tools)}) repeated {periods} times "
                    "with unchanged results"
                ),
                evidence=evidence,
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
            "waited": state.waited,
            "sleeping": list(state.sleeping),
            "handoff_tools": list(state.handoff_tools),
            "last_time": state.last_time,
            "user": state.user,
        }

    def restore_state(self, data: dict[str, Any]) -> ActionCycleState:
        state = ActionCycleState(self.max_period)
        state.steps = [int(step) for step in data.get("steps") or []][-self.max_period :]
        state.tools = [str(tool) for tool in data.get("tools") or []][-self.max_period :]
        waited = data.get("waited")
        state.waited = waited & self._waited_mask if isinstance(waited, int) else 0
        sleeping = [int(call) for call in data.get("sleeping") or []]
        state.sleeping = tuple(sleeping[-SLEEPING_CALLS_CAP:])
        handoffs = [str(tool) for tool in data.get("handoff_tools") or []]
        state.handoff_tools = tuple(handoffs[-HANDOFF_TOOLS_CAP:])
        state.last_time = float(data.get("last_time") or 0.0)
        user = data.get("user")
        state.user = user if isinstance(user, int) else 0
        saved = [int(value) for value in data.get("match") or []]
        for period in range(2, self.max_period + 1):
            if period - 2 < len(saved):
                state.match[period] = saved[period - 2]
        return state
