"""Agent workflows: the acting agent, handoffs, and getting the STOP out.

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

from collections.abc import Callable
from typing import Any

from otel_loopguard import LoopGuardInterrupt, get_guard
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
