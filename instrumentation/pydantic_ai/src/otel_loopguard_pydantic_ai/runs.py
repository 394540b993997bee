"""``invoke_agent {agent}`` spans around ``Agent.iter``, the one door of every run."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from opentelemetry.trace import Tracer

from otel_loopguard import get_guard
from otel_loopguard_pydantic_ai.instrumented import agent_makes_own_spans

IterWrapper = Callable[
    [Callable[..., AbstractAsyncContextManager[Any]], Any, tuple[Any, ...], dict[str, Any]],
    AbstractAsyncContextManager[Any],
]


def iter_wrapper(tracer: Tracer) -> IterWrapper:
    """Wrap ``Agent.iter`` (an async context manager) in one that holds the agent span.

    The span is entered and left in the task that enters and leaves ``iter`` (for
    ``run_stream_events`` that is pydantic-ai's background task), so it ends exactly once
    whichever way the run ends: result, error, interrupt, cancellation or early close.
    """

    def wrapper(
        wrapped: Callable[..., AbstractAsyncContextManager[Any]],
        instance: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> AbstractAsyncContextManager[Any]:
        inner = wrapped(*args, **kwargs)
        if agent_makes_own_spans(instance, kwargs.get("model")):
            return inner
        name = getattr(instance, "name", None) or "agent"
        conversation = kwargs.get("conversation_id")
        return _agent_span(inner, tracer, name, conversation if conversation != "new" else None)

    return wrapper


@asynccontextmanager
async def _agent_span(
    inner: AbstractAsyncContextManager[Any],
    tracer: Tracer,
    agent_name: str,
    conversation_id: str | None,
) -> AsyncIterator[Any]:
    with get_guard().agent_run(tracer, agent_name, conversation_id=conversation_id):
        async with inner as agent_run:
            yield agent_run
