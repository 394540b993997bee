"""``invoke_agent {agent}`` spans around agent and agent-workflow runs, for the handler's life.

``run()`` of ``FunctionAgent``, ``ReActAgent``, ``CodeActAgent`` and ``AgentWorkflow`` only
schedules the workflow and returns a handler: the run outlives the call, so it is not the
kit's plain agent-run wrapper. The span is made current while ``run`` creates the workflow
task (which copies the context, so tool spans become its children), then detached from the
caller and ended when the handler is done.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from opentelemetry.trace import Tracer

from otel_loopguard import get_guard


def run_wrapper(tracer: Tracer) -> Callable[..., Any]:
    """``run()`` of agents and agent workflows: an ``invoke_agent`` span for the handler's life.

    ``run`` only schedules the workflow and returns a handler; the span is made current
    while ``run`` creates the workflow task (which copies the context, so tool spans become
    its children), then detached from the caller and ended when the handler is done.
    """

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: Any, kwargs: Any) -> Any:
        guard = get_guard()
        try:
            name = _agent_name(instance)
            run = guard.agent_run(tracer, name)
            run.__enter__()
        except Exception as exc:  # never break the run for our bookkeeping
            guard.telemetry.internal_error("llamaindex.run", exc)
            return wrapped(*args, **kwargs)
        try:
            handler = wrapped(*args, **kwargs)
        except BaseException as exc:
            run.__exit__(type(exc), exc, exc.__traceback__)
            raise
        run.suspend()
        try:
            _when_done(handler, lambda done: _finish(run, done))
        except Exception as exc:  # no way to learn the end: end the span now
            guard.telemetry.internal_error("llamaindex.run", exc)
            run.resume()
            run.__exit__(None, None, None)
        return handler

    return wrapper


def _when_done(handler: Any, callback: Callable[[Any], None]) -> None:
    """Call ``callback(future)`` when the run ends, before whoever awaits the handler resumes.

    Older workflow handlers are futures; newer ones keep the run's result in a task. A done
    callback registered now runs before the wake-up of a caller who awaits the handler
    later, so the span has ended by the time ``await handler`` returns or raises.
    """
    add_done_callback = getattr(handler, "add_done_callback", None)
    if add_done_callback is None:
        result_task = getattr(handler, "_result_task", None)
        add_done_callback = getattr(result_task, "add_done_callback", None)
    if add_done_callback is not None:
        add_done_callback(callback)
        return
    watcher = asyncio.ensure_future(_settled(handler))
    watcher.add_done_callback(callback)


async def _settled(handler: Any) -> Any:
    return await handler


def _agent_name(instance: Any) -> str:
    """The agent's name; a multi-agent workflow is named by its class (its agents take turns)."""
    name = getattr(instance, "name", None)
    return str(name) if isinstance(name, str) and name else type(instance).__name__


def _finish(run: Any, done: Any) -> None:
    if done.cancelled():
        error: BaseException | None = asyncio.CancelledError()
    else:
        error = done.exception()
    run.resume()
    run.__exit__(type(error) if error is not None else None, error, None)
