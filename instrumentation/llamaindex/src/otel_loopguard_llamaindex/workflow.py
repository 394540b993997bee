"""Agent workflows: the run span, the acting agent, handoffs, and getting the STOP out.

Why the interrupt needs help here: the agent workflows call tools in ``_call_tool`` and turn
any ``Exception`` into an error output for the model, so a plain exception never stops the
loop. A ``BaseException`` passes that handler, but then reaches the workflow runtime's step
worker, which only catches ``Exception``: the worker task dies unobserved and the run hangs
until its timeout. So the ``_call_tool`` wrappers catch the gate's ``LoopGuardInterrupt``
and raise :class:`LoopGuardWorkflowInterrupt` instead: it is both a ``LoopGuardInterrupt``
(the caller's ``except LoopGuardInterrupt`` catches it) and an ``Exception`` (the runtime
fails the step and hands the error to ``await handler`` / ``stream_events()``). Raised
outside ``_call_tool``'s own ``try``, nothing turns it into a message for the model.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from opentelemetry.trace import Tracer

from otel_loopguard import LoopGuardInterrupt
from otel_loopguard.guard import get_guard
from otel_loopguard_llamaindex.tools import CURRENT_AGENT, CURRENT_CALL_ID

_HANDOFF_TOOL = "handoff"


class LoopGuardWorkflowInterrupt(LoopGuardInterrupt, Exception):
    """A :class:`~otel_loopguard.LoopGuardInterrupt` that a workflow step can fail with."""

    @classmethod
    def from_interrupt(cls, interrupt: LoopGuardInterrupt) -> LoopGuardWorkflowInterrupt:
        return cls(interrupt.decision, str(interrupt))


def _interrupt_for_workflow(interrupt: LoopGuardInterrupt) -> BaseException:
    if isinstance(interrupt, Exception):
        return interrupt
    return LoopGuardWorkflowInterrupt.from_interrupt(interrupt)


async def _current_agent_of(instance: Any, ctx: Any) -> str | None:
    """The agent whose turn it is: the agent itself, or the multi-agent workflow's current one."""
    name = getattr(instance, "name", None)
    if isinstance(name, str) and name and not hasattr(instance, "agents"):
        return name
    try:
        current = await ctx.store.get("current_agent_name", default=None)
    except Exception:
        return None
    return str(current) if current else None


def call_tool_wrapper() -> Callable[..., Any]:
    """``_call_tool(ctx, tool, tool_input)`` of both agent workflow classes."""

    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: Any, kwargs: Any) -> Any:
        guard = get_guard()
        ctx = args[0] if args else kwargs.get("ctx")
        tool = args[1] if len(args) > 1 else kwargs.get("tool")
        tool_input = args[2] if len(args) > 2 else kwargs.get("tool_input")
        try:
            agent = await _current_agent_of(instance, ctx)
        except Exception as exc:  # pragma: no cover - defensive
            guard.telemetry.internal_error("llamaindex.call_tool", exc)
            agent = None
        token = CURRENT_AGENT.set(agent)
        try:
            output = await wrapped(*args, **kwargs)
        except LoopGuardInterrupt as interrupt:
            raise _interrupt_for_workflow(interrupt) from None
        finally:
            CURRENT_AGENT.reset(token)
        _observe_handoff(guard, tool, tool_input, output, agent)
        return output

    return wrapper


def call_tool_step_wrapper() -> Callable[..., Any]:
    """The ``call_tool`` step (``ctx, ev: ToolCall``): the model's id for the call, which
    ``_call_tool`` is not given, travels to the tool span in a contextvar."""

    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: Any, kwargs: Any) -> Any:
        event = args[1] if len(args) > 1 else kwargs.get("ev")
        call_id = getattr(event, "tool_id", None)
        token = CURRENT_CALL_ID.set(call_id if isinstance(call_id, str) and call_id else None)
        try:
            return await wrapped(*args, **kwargs)
        finally:
            CURRENT_CALL_ID.reset(token)

    return wrapper


def _observe_handoff(
    guard: Any, tool: Any, tool_input: Any, output: Any, agent: str | None
) -> None:
    """AgentWorkflow's ``handoff`` tool moved the task to ``to_agent``: report it.

    The handoff tool ran inside our gate, whose span no processor maps to a handoff. A STOP
    (a closed handoff cycle repeating) is raised here, outside ``_call_tool``'s handler.
    """
    try:
        if getattr(getattr(tool, "metadata", None), "name", None) != _HANDOFF_TOOL:
            return
        target = tool_input.get("to_agent") if isinstance(tool_input, dict) else None
        if not target or getattr(output, "is_error", False):
            return
    except Exception as exc:  # pragma: no cover - defensive
        guard.telemetry.internal_error("llamaindex.handoff", exc)
        return
    try:
        guard.observe_handoff(agent, str(target))
    except LoopGuardInterrupt as interrupt:
        raise _interrupt_for_workflow(interrupt) from None


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
