"""A handoff cycle's STOP names the tool that looped and the agents as they are named.

A ``transfer_to_<agent>`` tool that hands off is a tool call and a handoff; the handoff's
decision carries the tool (``gen_ai.tool.name``: "Tools that loop most" has a bar for it,
not an empty one) and the acting agent, on the span event and the decision metric, read
back through the real SDK.
"""

from __future__ import annotations

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.events import EventKind
from otel_loopguard.spans.events import span_to_events
from otel_loopguard.spans.view import SpanView

from .helpers import Stack, foreign_agent_span


def from_attributes(name: str, attributes: dict) -> SpanView:
    return SpanView(
        name=name,
        trace_id="0af7651916cd43dd8448eb211c80319c",
        span_id="b7ad6b7169203331",
        attributes=attributes,
    )


def test_a_transfer_tools_handoff_carries_the_tool_a_handoff_span_none() -> None:
    tool = from_attributes(
        "execute_tool transfer_to_billing_agent",
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "transfer_to_billing_agent"},
    )
    *_, handoff = span_to_events(tool, "r", LoopGuardConfig(), actor="triage-agent")
    assert (handoff.kind, handoff.tool_name) == (EventKind.HANDOFF, "transfer_to_billing_agent")
    (sdk,) = span_to_events(
        from_attributes("Handoff: billing → triage", {}), "r", LoopGuardConfig()
    )
    assert sdk.kind is EventKind.HANDOFF and sdk.tool_name is None


def test_the_handoff_cycle_stop_is_labelled_with_its_tool_and_agent(stack: Stack) -> None:
    tracer = stack.tracer
    with foreign_agent_span(tracer, "triage-agent"):
        for index in range(4):
            ping = index % 2 == 0
            source = "triage-agent" if ping else "billing-agent"
            target = "billing_agent" if ping else "triage_agent"
            with tracer.start_as_current_span(
                f"execute_tool transfer_to_{target}",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": f"transfer_to_{target}",
                    "gen_ai.agent.name": source,
                },
            ):
                pass
    (stop,) = [
        e.attributes
        for _, e in stack.decision_events()
        if list(e.attributes["loopguard.detectors"]) == ["handoff_cycle"]
    ]
    assert stop["gen_ai.tool.name"] == "transfer_to_triage_agent"
    assert stop["gen_ai.agent.name"] == "billing-agent"
    assert "billing-agent → triage-agent" in stop["loopguard.reason"]
    (point,) = [
        p
        for p in stack.metric_points("loopguard.decisions")
        if p.attributes["detector"] == "handoff_cycle"
    ]
    assert dict(point.attributes) == {
        "action": "stop",
        "detector": "handoff_cycle",
        "gen_ai.agent.name": "billing-agent",
        "gen_ai.tool.name": "transfer_to_triage_agent",
    }
