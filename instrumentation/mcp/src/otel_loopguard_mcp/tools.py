"""``execute_tool {tool}`` spans around ``ClientSession.call_tool``."""

from __future__ import annotations

from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Tracer

from otel_loopguard.kit import SpanClass, classify_parts, span_attributes
from otel_loopguard.kit.scoped_call import Wrapper
from otel_loopguard.kit.tool_gate import CHECK_BEFORE, CheckOnly, GatedCall, tool_gate_wrapper


def call_tool_wrapper(tracer: Tracer) -> Wrapper:
    """Wrap ``ClientSession.call_tool(name, arguments=None, ...)``."""
    return tool_gate_wrapper(tracer, _read_call, _record_outcome, package="mcp", asynchronous=True)


def _read_call(
    instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> GatedCall | CheckOnly | None:
    name = args[0] if args else kwargs.get("name")
    if not isinstance(name, str):  # a call shape we do not know: stay out of the way
        return None
    if _inside_tool_span():  # the tool span around it is the execution: enforce only
        return CHECK_BEFORE
    return GatedCall(name, args[1] if len(args) > 1 else kwargs.get("arguments"))


def _inside_tool_span() -> bool:
    """Is the current span a tool span, ours or any dialect the span processor reads
    (GenAI conventions, OpenInference, OpenLLMetry, pydantic-ai)?"""
    span = trace.get_current_span()
    name = getattr(span, "name", None)  # a non-recording span has none
    if not isinstance(name, str):
        return False
    return classify_parts(name, span_attributes(span)) in (SpanClass.TOOL, SpanClass.HANDOFF)


def _record_outcome(call: Any, result: Any, gated: GatedCall) -> None:
    """The ``CallToolResult`` to the gate (the kit counts our errors, never raises them)."""
    if _is_error(result):
        call.set_error("tool_error", _text(result))
    else:
        call.set_result(_output(result))


def _is_error(result: Any) -> bool:
    return getattr(result, "is_error", False) is True


def _output(result: Any) -> Any:
    """What the tool returned: its structured content when present, else its text."""
    structured = getattr(result, "structured_content", None)
    return structured if structured is not None else _text(result)


def _text(result: Any) -> str:
    parts = getattr(result, "content", None) or ()
    return "\n".join(text for part in parts if isinstance(text := getattr(part, "text", None), str))
