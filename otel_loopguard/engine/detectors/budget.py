"""Hard per-run limits: model turns, tool calls, tokens, cost and wall time.

Semantics, the same for every limit: **a limit of N allows N**. ``max_steps=3`` lets the
run make three model calls; the fourth is the violation. ``0`` turns a limit off.

* :func:`budget_exceeded` is the pre-flight check the monitor runs *before* a call: it
  vetoes the call that would go over (the 4th model call when 3 were made, a model call
  once the tokens or cost already reached the budget, anything once the wall time is
  used up), so an enforcing wrapper never sends it.
* :class:`BudgetDetector` looks *after* the fact, at the counters the monitor updated
  for the event: it fires when a count is over its limit (``steps > max_steps``, tokens
  over the budget, ...), which is what a trace shows when nobody vetoed the call
  (observe mode, or spans from an instrumentation we do not wrap). It fires once per
  kind per run: the policy stops the run on the first, and a flood of identical signals
  would only inflate the metrics.

Cost is known only when every model of the run has a price (``OTEL_LOOPGUARD_PRICES``);
with an unknown cost the cost limit cannot be judged and is skipped, never guessed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Signal
from otel_loopguard.engine.detectors.base import RunCounters, mypyc_attr
from otel_loopguard.engine.detectors.state_io import export_dataclass, restore_dataclass
from otel_loopguard.engine.events import Event, EventKind

NAME = "budget"
KINDS = ("steps", "tool_calls", "tokens", "cost", "time")
CallKind = Literal["tool_call", "llm_call"]

_WHAT = {
    "steps": ("model turns", "max_steps"),
    "tool_calls": ("tool calls", "max_tool_calls"),
    "tokens": ("tokens", "token_budget"),
    "cost": ("cost", "cost_limit"),
    "time": ("seconds", "timeout"),
}


def _usage(kind: str, counters: RunCounters) -> float | None:
    if kind == "steps":
        return counters.steps
    if kind == "tool_calls":
        return counters.tool_calls
    if kind == "tokens":
        return counters.total_tokens
    if kind == "cost":
        return counters.cost
    return max(0.0, counters.now - counters.started_at)  # 0 before the clock is read


def _limit(kind: str, config: LoopGuardConfig) -> float:
    return float(getattr(config, _WHAT[kind][1]))


def _counted(what: str, amount: float) -> str:
    """``tool calls`` after most numbers, ``tool call`` after 1 (``cost`` has no plural)."""
    return what[:-1] if amount == 1 and what.endswith("s") else what


def _signal(kind: str, used: float, limit: float, *, preflight: bool) -> Signal:
    what, field = _WHAT[kind]
    variable = LoopGuardConfig.env_name(field)
    shown_used = round(used, 3) if isinstance(used, float) else used
    shown_limit = int(limit) if float(limit).is_integer() else limit
    if preflight:
        message = (
            f"the next call would exceed the run's limit of {shown_limit} "
            f"{_counted(what, shown_limit)} (used {shown_used}; {variable})"
        )
    else:
        message = (
            f"run used {shown_used} {_counted(what, shown_used)}, over its limit of "
            f"{shown_limit} ({variable})"
        )
    return Signal(
        detector=NAME,
        kind=kind,
        score=1.0,
        message=message,
        evidence={"limit": shown_limit, "used": shown_used, "preflight": preflight},
    )


def budget_exceeded(
    counters: RunCounters,
    config: LoopGuardConfig,
    kind: CallKind = "llm_call",
    *,
    expected_tokens: int = 0,
) -> Signal | None:
    """Would the next call of ``kind`` go over a limit? The veto signal, or ``None``.

    A model call is vetoed when ``steps`` already reached ``max_steps``, when the tokens
    used reached the budget or ``used + expected_tokens`` would pass it, or when the
    known cost reached ``cost_limit``. A tool call is vetoed when ``tool_calls`` reached
    ``max_tool_calls``, or when tokens or cost are already *over* their budget (a tool
    call spends none, so a budget used up exactly does not stop tools). Either kind is
    vetoed once ``timeout`` seconds have passed since the run started.
    """
    checks: list[tuple[str, float, float]] = []  # (kind, used, limit) that veto when used>=lim
    if kind == "llm_call":
        if config.max_steps:
            checks.append(("steps", counters.steps, config.max_steps))
        if config.token_budget:
            used = counters.total_tokens
            if used >= config.token_budget or used + max(0, expected_tokens) > config.token_budget:
                return _signal("tokens", used, config.token_budget, preflight=True)
        if config.cost_limit and counters.cost is not None:
            checks.append(("cost", counters.cost, config.cost_limit))
    else:
        if config.max_tool_calls:
            checks.append(("tool_calls", counters.tool_calls, config.max_tool_calls))
        if config.token_budget and counters.total_tokens > config.token_budget:
            return _signal("tokens", counters.total_tokens, config.token_budget, preflight=True)
        if config.cost_limit and counters.cost is not None and counters.cost > config.cost_limit:
            return _signal("cost", counters.cost, config.cost_limit, preflight=True)
    if config.timeout:
        checks.append(("time", counters.now - counters.started_at, config.timeout))
    for which, amount, limit in checks:
        if amount >= limit:
            return _signal(which, amount, float(limit), preflight=True)
    return None


@dataclass(slots=True, init=False)
class BudgetState:
    """Kinds already reported in this run (each fires once)."""

    fired: tuple[str, ...] = ()

    # Written out for mypyc, which leaves a generated __init__ interpreted (see Event)
    def __init__(
        self,
        fired: tuple[str, ...] = (),
    ) -> None:
        self.fired = fired


@mypyc_attr(allow_interpreted_subclasses=True)
class BudgetDetector:
    """Fires when a run's counters went over a configured limit (kind = which limit)."""

    name: ClassVar[str] = NAME

    def __init__(self, config: LoopGuardConfig) -> None:
        self._limits = tuple(
            (kind, _limit(kind, config)) for kind in KINDS if _limit(kind, config) > 0
        )
        # a limit that is off never trips the one comparison on the hot path
        self._max_steps = config.max_steps or math.inf
        self._max_tool_calls = config.max_tool_calls or math.inf
        self._token_budget = config.token_budget or math.inf
        self._cost_limit = config.cost_limit or math.inf
        self._timeout = config.timeout or math.inf
        # the monitor calls a detector only for these kinds: wall time can pass on any
        # event, the other counters move only on model turns and tool calls
        self.event_kinds: frozenset[EventKind] | None
        if config.timeout:
            self.event_kinds = None
        elif self._limits:
            self.event_kinds = frozenset({EventKind.LLM_RESPONSE, EventKind.TOOL_CALL})
        else:
            self.event_kinds = frozenset()

    def new_state(self) -> BudgetState:
        return BudgetState()

    def observe(self, event: Event, state: BudgetState, counters: RunCounters) -> Signal | None:
        c = counters
        cost = c.cost
        if (
            c.steps > self._max_steps
            or c.tool_calls > self._max_tool_calls
            or c.input_tokens + c.output_tokens > self._token_budget
            or (cost is not None and cost > self._cost_limit)
            or c.now - c.started_at > self._timeout
        ):
            return self._report(state, c)
        return None

    def _report(self, state: BudgetState, counters: RunCounters) -> Signal | None:
        """The first limit over which the run went and that is not reported yet."""
        for kind, limit in self._limits:
            if kind in state.fired:
                continue
            used = _usage(kind, counters)
            if used is not None and used > limit:
                state.fired = (*state.fired, kind)
                return _signal(kind, used, limit, preflight=False)
        return None

    def export_state(self, state: BudgetState) -> dict[str, Any]:
        return export_dataclass(state)

    def restore_state(self, data: dict[str, Any]) -> BudgetState:
        state = restore_dataclass(BudgetState, data)
        state.fired = tuple(kind for kind in state.fired if kind in KINDS)
        return state
