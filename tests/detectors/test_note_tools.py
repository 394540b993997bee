"""A ``think`` between two identical failing calls is not new work (τ-bench's airline agent:
the same booking refused with the same error three times, a differently worded thought
between each, was only ever warned about)."""

from __future__ import annotations

from scripted_runs import worst_action

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Action

BOOKING = {"user_id": "mohamed_silva_9265", "flights": ["HAT023", "HAT220"], "payment": 1625}
REFUSED = "Error: payment amount does not add up, total price is 4875, but paid 1625"


def _booking_attempts(between) -> list:
    steps = []
    for attempt in range(3):
        steps.append(("book_reservation", BOOKING, REFUSED))
        steps.append(between(attempt))
    return steps


def test_the_same_refusal_with_a_thought_between_each_attempt_stops() -> None:
    def thought(attempt: int):
        return ("think", {"thought": f"attempt {attempt}: maybe the segments are wrong"}, "")

    action, detectors = worst_action(_booking_attempts(thought))

    assert action is Action.STOP
    assert "no_progress" in detectors


def test_the_same_refusal_with_real_work_between_each_attempt_is_not_stopped() -> None:
    """Its nearest legitimate twin: the agent changes the payment between the attempts
    (distinct successful work), so the identical refusal is not yet no progress."""

    def new_payment(attempt: int):
        amount = 1625 + 1000 * attempt
        return ("update_payment", {"amount": amount}, f"payment set to {amount}")

    action, _ = worst_action(_booking_attempts(new_payment))

    assert action < Action.STOP


def test_a_tool_named_like_a_thought_but_doing_work_is_still_work() -> None:
    def search(attempt: int):
        return ("think_and_search", {"query": f"fare rules {attempt}"}, f"{attempt} rules")

    action, _ = worst_action(_booking_attempts(search))

    assert action < Action.STOP


def test_a_note_tool_of_the_agents_own_name_is_configured_by_its_variable() -> None:
    """An agent whose thought tool is ``log_reasoning``: as shipped it is work between the
    refusals (each thought differs) and the loop goes on; named in
    ``OTEL_LOOPGUARD_NOTE_TOOLS`` it is a thought, and the same refusal stops."""

    def reasoning(attempt: int):
        return ("log_reasoning", {"text": f"attempt {attempt}: try the other card"}, "noted")

    steps = _booking_attempts(reasoning)
    as_shipped, _ = worst_action(steps)
    configured = LoopGuardConfig.from_env({"OTEL_LOOPGUARD_NOTE_TOOLS": "think,log_reasoning"})
    action, detectors = worst_action(steps, configured)

    assert as_shipped < Action.STOP
    assert action is Action.STOP and "no_progress" in detectors
