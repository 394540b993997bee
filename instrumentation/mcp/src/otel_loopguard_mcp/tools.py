"""``execute_tool {tool}`` spans around ``ClientSession.call_tool``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Tracer

from otel_loopguard.enforcement import get_guard

AsyncWrapper = Callable[[Callable[..., Awaitable[Any]], Any, tuple[Any, ...], dict[str, Any]], Any]

# Span names under which another instrumentation already reports a tool execution.
_TOOL_SPAN_PREFIXES = ("execute_tool", "running tool")


def call_tool_wrapper(tracer: Tracer) -> AsyncWrapper:
    """Wrap ``ClientSession.call_tool(name, arguments=None, ...)``."""

    async def wrapper(
        wrapped: Callable[..., Awaitable[Any]],
        instance: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        name = args[0] if args else kwargs.get("name")
        if not isinstance(name, str):  # a call shape we do not know: stay out of the way
            return await wrapped(*args, **kwargs)
        arguments = args[1] if len(args) > 1 else kwargs.get("arguments")
        guard = get_guard()
        if _inside_tool_span():
            guard.check_current_run()
            return await wrapped(*args, **kwargs)
        with guard.tool_call(tracer, name, arguments) as call:
            result = await wrapped(*args, **kwargs)
            _record_outcome(call, result)
            return result

    return wrapper


def _inside_tool_span() -> bool:
    """Is the current span a GenAI tool span of another instrumentation (or our own)?"""
    span = trace.get_current_span()
    attributes = getattr(span, "attributes", None) or {}
    if attributes.get("gen_ai.operation.name") == "execute_tool":
        return True
    name = getattr(span, "name", "")
    return isinstance(name, str) and name.startswith(_TOOL_SPAN_PREFIXES)


def _record_outcome(call: Any, result: Any) -> None:
    try:
        if _is_error(result):
            call.set_error("tool_error", _text(result))
        else:
            call.set_result(_output(result))
    except Exception as exc:  # never let our bookkeeping break the client
        get_guard().telemetry.internal_error("mcp.tool_outcome", exc)


def _is_error(result: Any) -> bool:
    return getattr(result, "is_error", False) is True


def _output(result: Any) -> Any:
    """What the tool returned: its structured content when present, else its text."""
    structured = getattr(result, "structured_content", None)
    return structured if structured is not None else _text(result)


def _text(result: Any) -> str:
    parts = getattr(result, "content", None) or ()
    return "\n".join(text for part in parts if isinstance(text := getattr(part, "text", None), str))
