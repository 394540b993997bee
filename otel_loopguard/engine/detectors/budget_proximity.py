"""Early warning before a hard budget is hit: little token or cost headroom left.

Fires when the tokens left under ``token_budget`` drop to ``reserve_tokens`` or fewer, or
the cost left under ``cost_limit`` drops to ``reserve_cost_fraction`` of the limit or less
(kind ``tokens`` / ``cost``). A warning is useful once, at the crossing: usage only grows,
so "still close" on every later event is noise. If the headroom grows again (a restored
run under a larger budget) the crossing is re-armed.

A budget that is off (``0``), a reserve of ``0``, or an unknown cost turns that half off.
A run already *over* its budget is the budget detector's business; proximity stays quiet
then (but counts the crossing as seen, so it does not fire later either).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Signal
from otel_loopguard.engine.detectors.base import RunCounters, mypyc_attr
from otel_loopguard.engine.detectors.state_io import export_dataclass, restore_dataclass
from otel_loopguard.engine.events import Event, EventKind

NAME = "budget_proximity"


@dataclass(slots=True, init=False)
class ProximityState:
    """Whether each headroom is currently crossed (armed again when it is not)."""

    tokens_crossed: bool = False
    cost_crossed: bool = False

    # Written out for mypyc, which leaves a generated __init__ interpreted (see Event)
    def __init__(
        self,
        tokens_crossed: bool = False,
        cost_crossed: bool = False,
    ) -> None:
        self.tokens_crossed = tokens_crossed
        self.cost_crossed = cost_crossed


@mypyc_attr(allow_interpreted_subclasses=True)
class BudgetProximityDetector:
    """Warns once when the run gets within its reserve of the token or cost budget."""

    name: ClassVar[str] = NAME

    def __init__(self, config: LoopGuardConfig) -> None:
        self._token_budget = config.token_budget
        self._reserve_tokens = config.reserve_tokens
        self._cost_limit = config.cost_limit
        self._reserve_cost = config.reserve_cost_fraction * config.cost_limit
        # tokens and cost move only on model turns; with both budgets off, never called
        watching = (self._token_budget and self._reserve_tokens) or (
            self._cost_limit and self._reserve_cost
        )
        self.event_kinds = frozenset({EventKind.LLM_RESPONSE} if watching else ())

    def new_state(self) -> ProximityState:
        return ProximityState()

    def observe(self, event: Event, state: ProximityState, counters: RunCounters) -> Signal | None:
        if self._token_budget and self._reserve_tokens:
            used = counters.total_tokens
            left = self._token_budget - used
            crossed = left <= self._reserve_tokens
            if crossed and not state.tokens_crossed:
                state.tokens_crossed = True
                if left >= 0:
                    return self._signal("tokens", used, self._token_budget, left)
            state.tokens_crossed = crossed
        if self._cost_limit and self._reserve_cost and counters.cost is not None:
            used_cost = counters.cost
            left_cost = self._cost_limit - used_cost
            crossed = left_cost <= self._reserve_cost
            if crossed and not state.cost_crossed:
                state.cost_crossed = True
                if left_cost >= 0:
                    return self._signal("cost", used_cost, self._cost_limit, left_cost)
            state.cost_crossed = crossed
        return None

    def _signal(self, kind: str, used: float, limit: float, left: float) -> Signal:
        if kind == "tokens":
            reserve = f"{self._reserve_tokens} tokens"
            shown_left: float | int = int(left)
        else:
            reserve = f"{round(self._reserve_cost, 6)}"
            shown_left = round(left, 6)
            used = round(used, 6)
        return Signal(
            detector=NAME,
            kind=kind,
            score=min(1.0, max(0.0, used / limit)),
            message=(
                f"run is close to its {kind} budget: {shown_left} of {limit:g} left, "
                f"within the reserve of {reserve}"
            ),
            evidence={"used": used, "limit": limit, "left": shown_left},
        )

    def export_state(self, state: ProximityState) -> dict[str, Any]:
        return export_dataclass(state)

    def restore_state(self, data: dict[str, Any]) -> ProximityState:
        return restore_dataclass(ProximityState, data)
