"""The decision on the span a user looks at: attributes a trace UI can filter on.

Trace UIs (Jaeger, Tempo, Phoenix, Langfuse) filter spans by attribute far better than by
event, so the span that takes a ``loopguard.decision`` event also takes the decision's
action, risk, detectors and reason as attributes, the most severe decision's when it gets
several. Read back from the real SDK's exported spans.
"""

from __future__ import annotations

import pytest

from otel_loopguard.engine.decisions import Action, Decision, LoopGuardInterrupt, Signal
from otel_loopguard.guard.decorators import agent_run, loopguard_tool

from .helpers import Stack, foreign_fetch_loop


def _stuck_search(stack: Stack) -> None:
    @loopguard_tool(tracer=stack.tracer, guard=stack.guard)
    def search(query: str) -> str:
        return "no results"

    with agent_run("researcher", tracer=stack.tracer, guard=stack.guard):
        for _ in range(5):
            search("pricing")


def test_the_deciding_tool_span_carries_its_most_severe_decision(enforcing: Stack) -> None:
    with pytest.raises(LoopGuardInterrupt):
        _stuck_search(enforcing)
    tools = enforcing.spans("execute_tool search")
    deciding = [s for s in tools if any(e.name == "loopguard.decision" for e in s.events)]
    (span,) = deciding  # the third call: a warn and a stop on it
    events = [dict(e.attributes) for e in span.events if e.name == "loopguard.decision"]
    assert [e["loopguard.action"] for e in events] == ["warn", "stop"]
    stop = events[1]
    attrs = dict(span.attributes)
    assert attrs["loopguard.action"] == "stop"
    assert attrs["loopguard.risk_score"] == stop["loopguard.risk_score"]
    assert tuple(attrs["loopguard.detectors"]) == ("repetition", "no_progress")
    assert attrs["loopguard.reason"] == stop["loopguard.reason"]
    # "spans where loopguard stopped" is one attribute filter: it finds that span, and the
    # agent span the STOP interrupted (a trace list of root spans filters on it too)
    stopped = [s for s in enforcing.spans() if (s.attributes or {}).get("loopguard.action")]
    assert [s.name for s in stopped if s.attributes["loopguard.action"] == "stop"] == [
        "execute_tool search",
        "invoke_agent researcher",
    ]
    (agent,) = enforcing.spans("invoke_agent researcher")
    assert not [e for e in agent.events if e.name == "loopguard.decision"]  # not twice
    for key in ("loopguard.risk_score", "loopguard.detectors", "loopguard.reason"):
        assert agent.attributes[key] == span.attributes[key], key
    # the calls before it decided nothing and say nothing
    assert all("loopguard.action" not in (s.attributes or {}) for s in tools if s is not span)


def test_a_later_milder_decision_does_not_overwrite_the_span(stack: Stack) -> None:
    telemetry = stack.guard.telemetry
    signal = Signal("repetition", "exact", 0.9, "search called 3 times")
    stop = Decision(Action.STOP, risk=0.9, reasons=(signal,))
    weaker_stop = Decision(Action.STOP, risk=0.8, reasons=(signal,))
    warn = Decision(Action.WARN, risk=0.95, reasons=(signal,))
    span = stack.tracer.start_span("execute_tool search")
    for decision in (warn, stop, warn, weaker_stop):
        assert telemetry.add_decision_event(span, decision, None)
    span.end()
    (ended,) = stack.spans("execute_tool search")
    assert ended.attributes["loopguard.action"] == "stop"
    assert ended.attributes["loopguard.risk_score"] == 0.9
    assert [e.attributes["loopguard.action"] for e in ended.events] == [
        "warn",
        "stop",
        "warn",
        "stop",
    ]
    assert not telemetry.add_decision_event(span, stop, None)  # ended: nothing more


def test_a_foreign_agent_span_seen_by_the_processor_carries_the_stop(stack: Stack) -> None:
    tracer = stack.tracer
    foreign_fetch_loop(tracer)
    (agent,) = stack.spans("invoke_agent scout")
    assert agent.attributes["loopguard.action"] == "stop"
    assert 0.75 <= agent.attributes["loopguard.risk_score"] <= 1.0
