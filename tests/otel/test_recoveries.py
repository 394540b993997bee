"""What became of each replan's recommendation, as a user sees it in metrics and spans:
``loopguard.recoveries`` {detector, outcome} and ``loopguard.recommendation.delivery``.

A recommendation delivered to a model that then acts is ``resolved`` when the run ends; one
delivered to a model that goes on is ``persisted`` (the ladder stopped the run); one that
nothing in the process can deliver (the span processor alone, over another
instrumentation's spans) is ``not_delivered`` at once, said in one warning per process.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from otel.helpers import Stack, foreign_agent_span, foreign_tool_span, make_stack
from otel_loopguard import LoopGuardInterrupt, agent_run, set_guard, tool_span
from otel_loopguard.guard import deliveries as deliveries_module
from otel_loopguard.kit import ModelCall, model_turn_wrapper


@pytest.fixture
def enforcing() -> Any:
    previous: list[Any] = []

    def make(**config: Any) -> Stack:
        stack = make_stack(mode="enforce", read_only_loop_threshold=2, **config)
        previous.append(set_guard(stack.guard))
        return stack

    yield make
    if previous:
        set_guard(previous[0])


def _read(call: ModelCall) -> dict[str, Any]:
    tool = call.result
    return {
        "model": "m",
        "finish_reason": "tool_calls" if tool else "stop",
        "requested_tool_calls": [(tool, {"path": len(call.args[0])})] if tool else [],
    }


def _deliver(call: ModelCall, message: str) -> bool:
    call.args = ([*call.args[0], message],)
    return True


def _agent(stack: Stack, listens: bool, steps: int = 12) -> None:
    """A hand-written loop that reads files until it is told to act (when it listens)."""
    wrapper = model_turn_wrapper(_read, package="tests", deliver=_deliver)

    told = []  # the model remembers the nudge it read (the request carried it once)

    def model(messages: list[str]) -> str | None:
        if any("Act on what you found" in m for m in messages):
            told.append(True)
        if told and listens:
            return "write_file" if messages[-1] != "written" else None
        return "read_file"

    messages: list[str] = ["task"]
    with agent_run("coder", tracer=stack.tracer, guard=stack.guard):
        for _ in range(steps):
            tool = wrapper(model, None, (messages,), {})
            if tool is None:
                return
            with tool_span(tool, {"path": len(messages)}, tracer=stack.tracer, guard=stack.guard):
                pass
            messages.append("written" if tool == "write_file" else "contents")


def test_a_nudge_the_model_acts_on_is_resolved_when_the_run_ends(enforcing: Any) -> None:
    stack = enforcing()
    _agent(stack, listens=True)
    assert stack.metric_total("loopguard.recoveries", outcome="resolved") == 1
    assert stack.metric_total("loopguard.recoveries", outcome="persisted") == 0
    assert stack.metric_total("loopguard.runs", state="completed") == 1
    replans = [
        event.attributes
        for _, event in stack.decision_events()
        if event.attributes["loopguard.action"] == "replan"
    ]
    assert [r["loopguard.recommendation.delivery"] for r in replans] == ["queued"]


def test_a_nudge_the_model_ignores_is_persisted_and_the_run_stopped(enforcing: Any) -> None:
    stack = enforcing()
    with pytest.raises(LoopGuardInterrupt) as raised:
        _agent(stack, listens=False)
    assert "the nudge did not help" in raised.value.decision.reason
    assert stack.metric_total("loopguard.recoveries", outcome="persisted") == 1
    assert stack.metric_total("loopguard.recoveries", outcome="resolved") == 0
    assert stack.metric_total("loopguard.interrupts", detector="read_only_loop") == 1


def test_spans_alone_cannot_deliver_and_say_so_once(
    enforcing: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Another instrumentation's spans, no framework package in the process: the replan is
    recorded as not delivered, on its decision event and in the metric, and one warning
    says what to install."""
    monkeypatch.setattr(deliveries_module, "DELIVERING_PACKAGES", set())
    stack = enforcing()
    caplog.set_level(logging.WARNING, logger="otel_loopguard")
    for run in range(2):
        with foreign_agent_span(stack.tracer, f"scout-{run}"):
            for index in range(6):
                with foreign_tool_span(
                    stack.tracer, "read_file", arguments=f'{{"path": "f{index}.py"}}', result="x"
                ):
                    pass
    replans = [
        event.attributes
        for _, event in stack.decision_events()
        if event.attributes["loopguard.action"] == "replan"
    ]
    assert replans and all(
        r["loopguard.recommendation.delivery"] == "not_delivered" for r in replans
    )
    assert stack.metric_total("loopguard.recoveries", outcome="not_delivered") == len(replans)
    warnings = [r for r in caplog.records if "can deliver its recommendation" in r.getMessage()]
    assert len(warnings) == 1


def test_observe_mode_says_delivery_is_off_and_counts_nothing() -> None:
    stack = make_stack(mode="observe", read_only_loop_threshold=2)
    previous = set_guard(stack.guard)
    try:
        _agent(stack, listens=True)
    finally:
        set_guard(previous)
    replans = [
        event.attributes
        for _, event in stack.decision_events()
        if event.attributes["loopguard.action"] == "replan"
    ]
    assert replans and all(r["loopguard.recommendation.delivery"] == "off" for r in replans)
    for outcome in ("resolved", "persisted", "not_delivered"):
        assert stack.metric_total("loopguard.recoveries", outcome=outcome) == 0
