"""User policies loaded by import path in tests (``policies_for_tests:...``)."""

from __future__ import annotations

from otel_loopguard.engine.decisions import Action, Decision
from otel_loopguard.engine.policy import PolicyInput

NOT_CALLABLE = 42


def pause_on_any_signal(policy_input: PolicyInput) -> Decision:
    """Pause whenever a detector reports anything; otherwise continue."""
    if policy_input.new_signals:
        return Decision(Action.PAUSE, risk=0.5, reasons=policy_input.new_signals)
    return Decision(Action.CONTINUE)


class Namespace:
    @staticmethod
    def stop_after_five_events(policy_input: PolicyInput) -> Decision:
        if policy_input.counters.events >= 5:
            return Decision(Action.STOP, risk=1.0)
        return Decision(Action.CONTINUE)


def broken(policy_input: PolicyInput) -> Decision:
    raise RuntimeError("user policy bug")


def loosely_typed(policy_input: PolicyInput) -> Decision:
    """What a quickly written policy returns: a plain-string action, an int risk, a list of
    reasons, a string end state; and a signal of its own with an int score, no evidence."""
    from otel_loopguard.engine.decisions import Signal

    if policy_input.counters.events >= 3:
        mine = Signal("my_policy", "too_many", 1, "three events is enough", None)
        return Decision("stop", 1, [*policy_input.new_signals, mine], None, None, "stopped")
    return Decision("continue")
