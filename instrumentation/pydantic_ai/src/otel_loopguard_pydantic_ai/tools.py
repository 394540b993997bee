"""``execute_tool {tool}`` spans, or enforcement alone around pydantic-ai's own spans."""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import Tracer

from otel_loopguard.kit.scoped_call import Wrapper
from otel_loopguard.kit.tool_gate import CHECK_AROUND, CheckOnly, GatedCall, tool_gate_wrapper
from otel_loopguard_pydantic_ai.instrumented import (
    tool_manager_makes_own_spans,
    tool_spans_record_content,
)


def tool_wrapper(tracer: Tracer) -> Wrapper:
    """Wrap ``ToolManager.execute_tool_call(validated, *, wrap_validation_errors=True)``."""
    return tool_gate_wrapper(tracer, _read_call, package="pydantic_ai", asynchronous=True)


def _read_call(
    instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> GatedCall | CheckOnly | None:
    validated = args[0] if args else kwargs.get("validated")
    call = getattr(validated, "call", None)
    name = getattr(call, "tool_name", None)
    if not isinstance(name, str):  # a call shape we do not know: stay out of the way
        return None
    if tool_manager_makes_own_spans(instance) and tool_spans_record_content(instance):
        # pydantic-ai's own execute_tool span ends inside the call; the span processor
        # turns it into events, then we only enforce its decision. With its content off
        # (include_content=False) that span says nothing of the arguments: our gate spans
        # the call around it (signatures, never content), and the processor, which feeds
        # a tool span nested in a gate span never, reads ours.
        return CHECK_AROUND
    return GatedCall(
        name,
        getattr(validated, "validated_args", None),
        call_id=getattr(call, "tool_call_id", None),
        agent=_agent_name(validated),
    )


def _agent_name(validated: Any) -> str | None:
    agent = getattr(getattr(validated, "ctx", None), "agent", None)
    name = getattr(agent, "name", None)
    return name if isinstance(name, str) else None
