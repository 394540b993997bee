"""The ladder on delegation ping-pong, through our gate in ``enforce`` mode: a manager whose
delegations keep bringing back the answers it already had is told so in its next model
request (the replan's recommendation, delivered once); a manager that then decides with
what it has completes its run, one that delegates again is stopped before its fifth
delegation's answer reaches it ("the nudge did not help").
"""

from __future__ import annotations

from typing import Any

import pytest
from otel.helpers import Stack, make_stack

from otel_loopguard import LoopGuardInterrupt, agent_run, set_guard, tool_span
from otel_loopguard.kit import ModelCall, model_turn_wrapper

DELEGATE = "Delegate work to coworker"
ANSWERS = {
    "Researcher": "I could not find any pricing information for Acme Corp on the public web; "
    "the pricing page requires a login.",
    "Analyst": "Without the pricing data I cannot compare Acme Corp with our plans; please "
    "provide the figures first.",
}
TASKS = [
    "Research Acme Corp's pricing plans",
    "Compare Acme's prices with ours",
    "Find out what Acme Corp charges its customers",
    "Work out whether Acme undercuts us on price",
    "Look up the subscription tiers Acme offers",
    "Tell me if we are more expensive than Acme",
    "Try once more to find Acme's price per seat",
    "Ask around for Acme's pricing",
]


@pytest.fixture
def enforcing() -> Any:
    previous: list[Any] = []

    def make(**config: Any) -> Stack:
        stack = make_stack(mode="enforce", **config)
        previous.append(set_guard(stack.guard))
        return stack

    yield make
    if previous:
        set_guard(previous[0])


def _read(call: ModelCall) -> dict[str, Any]:
    step = call.result
    return {
        "model": "m",
        "finish_reason": "tool_calls" if step else "stop",
        "requested_tool_calls": [(DELEGATE, step)] if step else [],
    }


def _deliver(call: ModelCall, message: str) -> bool:
    call.args = ([*call.args[0], message],)
    return True


def _manager(stack: Stack, listens: bool) -> list[str]:
    """A manager model that delegates reworded tasks to its two coworkers in turn until it
    is told to decide with what it has (when it listens). Returns the messages it saw."""
    wrapper = model_turn_wrapper(_read, package="tests", deliver=_deliver)
    told: list[bool] = []

    def model(messages: list[str]) -> dict[str, str] | None:
        if any("Do not delegate it again" in m for m in messages):
            told.append(True)
        if told and listens:
            return None  # answers with what it has
        number = sum(1 for m in messages if m in ANSWERS.values())
        coworker = "Researcher" if number % 2 == 0 else "Analyst"
        return {"task": TASKS[number], "context": "competitor report", "coworker": coworker}

    messages = ["Write a competitor report on Acme Corp"]
    with agent_run("Crew Manager", tracer=stack.tracer, guard=stack.guard):
        for _ in range(len(TASKS)):
            arguments = wrapper(model, None, (messages,), {})
            if arguments is None:
                break
            with tool_span(DELEGATE, arguments, tracer=stack.tracer, guard=stack.guard) as call:
                call.set_result(ANSWERS[arguments["coworker"]])
            messages.append(ANSWERS[arguments["coworker"]])
    return messages


def test_a_manager_that_heeds_the_nudge_completes(enforcing: Any) -> None:
    stack = enforcing()
    messages = _manager(stack, listens=True)
    assert sum(m in ANSWERS.values() for m in messages) == 4  # told after the fourth
    assert stack.metric_total("loopguard.runs", state="completed") == 1
    assert stack.metric_total("loopguard.recoveries", outcome="resolved") == 1


def test_a_manager_that_delegates_again_is_stopped_at_the_fifth_delegation(
    enforcing: Any,
) -> None:
    stack = enforcing()
    with pytest.raises(LoopGuardInterrupt) as raised:
        _manager(stack, listens=False)
    decision = raised.value.decision
    assert "the nudge did not help" in decision.reason
    assert "handoff_cycle" in decision.detectors
    delegations = [s for s in stack.exporter.get_finished_spans() if DELEGATE in s.name]
    assert len(delegations) == 5
    assert stack.metric_total("loopguard.recoveries", outcome="persisted") >= 1
