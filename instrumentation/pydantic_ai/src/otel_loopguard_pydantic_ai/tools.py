"""``execute_tool {tool}`` spans, or enforcement alone around pydantic-ai's own spans."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from opentelemetry.trace import Tracer

from otel_loopguard.guard import get_guard
from otel_loopguard_pydantic_ai.instrumented import tool_manager_makes_own_spans

AsyncWrapper = Callable[[Callable[..., Awaitable[Any]], Any, tuple[Any, ...], dict[str, Any]], Any]


def tool_wrapper(tracer: Tracer) -> AsyncWrapper:
    """Wrap ``ToolManager.execute_tool_call(validated, *, wrap_validation_errors=True)``."""

    async def wrapper(
        wrapped: Callable[..., Awaitable[Any]],
        instance: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        validated = args[0] if args else kwargs.get("validated")
        call = getattr(validated, "call", None)
        name = getattr(call, "tool_name", None)
        if not isinstance(name, str):  # a call shape we do not know: stay out of the way
            return await wrapped(*args, **kwargs)
        guard = get_guard()
        if tool_manager_makes_own_spans(instance):
            # pydantic-ai's own execute_tool span ends inside ``wrapped``; the span
            # processor turns it into events, then we only enforce its decision.
            guard.check_current_run()
            result = await wrapped(*args, **kwargs)
            guard.check_current_run()
            return result
        with guard.tool_call(
            tracer,
            name,
            getattr(validated, "validated_args", None),
            call_id=getattr(call, "tool_call_id", None),
            agent_name=_agent_name(validated),
        ) as span_call:
            result = await wrapped(*args, **kwargs)
            span_call.set_result(result)
            return result

    return wrapper


def _agent_name(validated: Any) -> str | None:
    agent = getattr(getattr(validated, "ctx", None), "agent", None)
    name = getattr(agent, "name", None)
    return name if isinstance(name, str) else None
