"""``invoke_agent {agent}`` spans around whole runs, streamed or not."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from opentelemetry.trace import Tracer

from otel_loopguard.guard import get_guard
from otel_loopguard_openai_agents.tools import AsyncWrapper


def run_wrapper(tracer: Tracer) -> AsyncWrapper:
    """Wrap ``AgentRunner.run`` (``Runner.run`` and ``run_sync`` both go through it)."""

    async def wrapper(
        wrapped: Callable[..., Awaitable[Any]],
        instance: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        agent = kwargs.get("starting_agent", args[0] if args else None)
        with get_guard().agent_run(
            tracer, _agent_name(agent), conversation_id=kwargs.get("conversation_id")
        ):
            return await wrapped(*args, **kwargs)

    return wrapper


def streaming_wrapper(tracer: Tracer) -> AsyncWrapper:
    """Wrap ``start_streaming``, the coroutine ``run_streamed``'s background task awaits.

    Opening the span inside that task (not in ``run_streamed``, which returns at once) makes
    it end exactly when the streamed run ends: normally, with an error, with our interrupt,
    or cancelled because the consumer called ``cancel()`` or stopped iterating.
    """

    async def wrapper(
        wrapped: Callable[..., Awaitable[Any]],
        instance: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        with get_guard().agent_run(
            tracer,
            _agent_name(kwargs.get("starting_agent")),
            conversation_id=kwargs.get("conversation_id"),
        ):
            return await wrapped(*args, **kwargs)

    return wrapper


def _agent_name(agent: Any) -> str:
    name = getattr(agent, "name", None)
    return name if isinstance(name, str) and name else "agent"
