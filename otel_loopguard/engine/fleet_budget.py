"""Fleet budgets: tokens and cost per user (or tenant) over a rolling window, every run of
that user in every process summed through the run store.

The same pre-flight rule as a run's own budgets (:func:`~otel_loopguard.engine.detectors.
budget.budget_exceeded`): a model call is vetoed once the window's tokens reached
``user_token_budget`` or would pass it with the call's expected tokens, or the window's
cost reached ``user_cost_limit``; a tool call (which spends nothing) only once either is
already over. The signal is a ``budget`` signal (so every policy that stops a run on its
budget stops it on its user's too, with ``budget_exceeded``) with ``evidence["scope"] ==
"user"``; the user's id is not in it (it may name a person).
"""

from __future__ import annotations

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Signal

NAME = "budget"


def fleet_budgets_on(config: LoopGuardConfig) -> bool:
    return bool(config.user_token_budget or config.user_cost_limit)


def fleet_budget_exceeded(
    tokens: int,
    cost: float,
    config: LoopGuardConfig,
    kind: str = "llm_call",
    *,
    expected_tokens: int = 0,
) -> Signal | None:
    """The veto signal when the user's window (``tokens``, ``cost``) leaves no room for
    the next call of ``kind``, else ``None``."""
    token_budget = config.user_token_budget
    cost_limit = config.user_cost_limit
    if kind == "llm_call":
        if token_budget and (
            tokens >= token_budget or tokens + max(0, expected_tokens) > token_budget
        ):
            return _signal("tokens", tokens, token_budget, config)
        if cost_limit and cost >= cost_limit:
            return _signal("cost", cost, cost_limit, config)
        return None
    if token_budget and tokens > token_budget:
        return _signal("tokens", tokens, token_budget, config)
    if cost_limit and cost > cost_limit:
        return _signal("cost", cost, cost_limit, config)
    return None


def _signal(kind: str, used: float, limit: float, config: LoopGuardConfig) -> Signal:
    variable = LoopGuardConfig.env_name(
        "user_token_budget" if kind == "tokens" else "user_cost_limit"
    )
    window = config.user_budget_window
    shown_window = int(window) if float(window).is_integer() else window
    shown_used = round(used, 6) if isinstance(used, float) else used
    shown_limit = int(limit) if float(limit).is_integer() else limit
    what = "tokens" if kind == "tokens" else "cost"
    return Signal(
        detector=NAME,
        kind=kind,
        score=1.0,
        message=(
            f"this run's user used {shown_used} {what} of their {shown_limit} per "
            f"{shown_window} s across all their runs ({variable})"
        ),
        evidence={
            "scope": "user",
            "limit": shown_limit,
            "used": shown_used,
            "window": shown_window,
            "preflight": True,
        },
    )
