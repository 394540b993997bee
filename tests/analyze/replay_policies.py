"""Policies for the replay tests, also loaded by import path (``--policy replay_policies:...``).

They decide from the monitor's counters alone, so the replay mechanics (run identity,
ordering, tool-call indexes, exit codes) are tested independently of the detectors.
"""

from __future__ import annotations

from otel_loopguard.engine.decisions import Action, Decision, Signal
from otel_loopguard.engine.events import EventKind
from otel_loopguard.engine.policy import PolicyInput

_THIRD_CALL = Signal("test_policy", "test_policy", 0.9, "third tool call of the run")
_MODEL_TURN = Signal("test_policy", "test_policy", 0.3, "a model turn")


def stop_at_third_tool_call(policy_input: PolicyInput) -> Decision:
    event = policy_input.event
    if event.kind is EventKind.TOOL_CALL and policy_input.counters.tool_calls == 3:
        return Decision(Action.STOP, risk=0.9, reasons=(_THIRD_CALL,))
    return Decision(Action.CONTINUE)


def warn_on_model_turns(policy_input: PolicyInput) -> Decision:
    if policy_input.event.kind is EventKind.LLM_RESPONSE:
        return Decision(Action.WARN, risk=0.3, reasons=(_MODEL_TURN,))
    return Decision(Action.CONTINUE)


def warn_on_turns_stop_at_third_call(policy_input: PolicyInput) -> Decision:
    stop = stop_at_third_tool_call(policy_input)
    return stop if stop.action is Action.STOP else warn_on_model_turns(policy_input)
