"""The tool gate around every tool call a Strands agent runs, and swarm handoffs.

Why this hook point (strands-agents 1.62): both tool executors, sequential and concurrent,
run each tool use of a model turn through one static method,
``ToolExecutor._stream_with_trace(agent, tool_use, tool_results, cycle_trace, cycle_span,
invocation_state, ...)``, an async generator of tool events ending with a
``ToolResultEvent``: the before-tool hooks, the tool middleware, the tool itself, Strands'
own ``execute_tool`` span, the after-tool hooks. Direct calls (``agent.tool.search(...)``)
take another path and are not gated; neither are tool uses Strands rejects before executing
them (an invalid tool use gets an error result without a call).

A trap: Strands opens its ``execute_tool`` span with the event loop cycle's span as its
explicit parent (``cycle_span``), not the current span, so it would be a sibling of our gate
span and the span processor would count the execution a second time. The gate hands its
own span to Strands as that parent: Strands' tool span nests in ours and is skipped.

How a :class:`~otel_loopguard.LoopGuardInterrupt` (a ``BaseException``) leaves a tool call:

* the sequential executor, and Strands' per-tool ``_stream``, catch ``Exception`` only: the
  interrupt passes, nothing else of the turn runs.
* the concurrent executor (an ``Agent``'s default) runs each tool use in an asyncio task
  (``ConcurrentToolExecutor._task``) that catches ``Exception`` and queues it for the
  executor to re-raise; a ``BaseException`` just ends the task, the executor sees the task's
  "done" marker and goes on as if the call had returned nothing: the loop asks the model
  again, and only that call's pre-flight check stops the run. So, in such a task, the gate's
  interrupt leaves as a :class:`~otel_loopguard_strands.carried.CarriedInterrupt` (an
  ``Exception``, see :mod:`.carried`): the executor re-raises it at once, cancels the calls
  of the same turn still running, and our wrapper of its ``_execute`` raises the interrupt
  itself again.

Handoffs: a ``Swarm``'s agents hand off with its ``handoff_to_agent(agent_name, message)``
tool. The gate spans the call like any other (a stopped run hands off nowhere); after a
successful call the handoff from the calling agent to ``agent_name`` is reported with
:meth:`~otel_loopguard.LoopGuard.observe_handoff`, for the handoff-cycle
detector.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncGenerator, Callable
from typing import Any

from opentelemetry.trace import Tracer

from otel_loopguard import LoopGuardInterrupt, get_guard
from otel_loopguard.kit.scoped_call import Wrapper
from otel_loopguard_strands.carried import CarriedInterrupt, uncarried
from otel_loopguard_strands.cycles import end_cycle_span

_HANDOFF_TOOL = "handoff_to_agent"
_CYCLE_SPAN_INDEX = 4  # _stream_with_trace(agent, tool_use, tool_results, cycle_trace, cycle_span

# the tool use a concurrent executor's task runs (set inside that task only)
_TASK_TOOL_USE: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "otel_loopguard_strands_task_tool_use", default=None
)


def tool_stream_wrapper(tracer: Tracer) -> Wrapper:
    """Wrap ``ToolExecutor._stream_with_trace`` (a static method)."""

    def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        return _gated_call(tracer, wrapped, args, kwargs)

    return wrapper


async def _gated_call(
    tracer: Tracer, wrapped: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> AsyncGenerator[Any, None]:
    guard = get_guard()
    try:
        agent = args[0] if args else kwargs["agent"]
        tool_use = args[1] if len(args) > 1 else kwargs["tool_use"]
        name = tool_use["name"]
        arguments = tool_use.get("input")
        call_id = tool_use.get("toolUseId")
        call_id = call_id if isinstance(call_id, str) else None
        cycle_span = args[_CYCLE_SPAN_INDEX] if len(args) > _CYCLE_SPAN_INDEX else None
        cycle_span = kwargs.get("cycle_span", cycle_span)
        known = isinstance(name, str) and bool(name)
    except Exception as exc:  # a call shape we do not know: stay out of the way
        guard.telemetry.internal_error("strands.tool_call", exc)
        known = False
    if not known:
        async for event in wrapped(*args, **kwargs):
            yield event
        return
    agent_name = _agent_name(guard, agent)
    in_task = _TASK_TOOL_USE.get() is tool_use
    try:
        with guard.tool_call(
            tracer, name, arguments, call_id=call_id, agent_name=agent_name
        ) as gate:
            args, kwargs = _parented_to(gate.span, args, kwargs)
            events = wrapped(*args, **kwargs)
            result_event = None
            try:
                async for event in events:
                    if _is_tool_result(event):
                        result_event = event
                    yield event
            finally:
                await events.aclose()
            if _record_outcome(guard, gate, result_event) and name == _HANDOFF_TOOL:
                target = arguments.get("agent_name") if isinstance(arguments, dict) else None
                if isinstance(target, str) and target:  # raises only our interrupt
                    guard.observe_handoff(agent_name, target, call_id=call_id, span=gate.span)
    except LoopGuardInterrupt as interrupt:
        end_cycle_span(cycle_span, interrupt)
        if in_task:
            raise CarriedInterrupt(interrupt) from None
        raise


def _agent_name(guard: Any, agent: Any) -> str | None:
    try:
        name = getattr(agent, "name", None)
    except Exception as exc:  # a name property that fails: the call is gated all the same
        guard.telemetry.internal_error("strands.tool_agent", exc)
        return None
    return name if isinstance(name, str) else None


def _parented_to(
    span: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The call's arguments with our gate span as the parent of Strands' tool span."""
    if not span.is_recording():
        return args, kwargs
    if len(args) > _CYCLE_SPAN_INDEX:
        return (*args[:_CYCLE_SPAN_INDEX], span, *args[_CYCLE_SPAN_INDEX + 1 :]), kwargs
    if "cycle_span" in kwargs:
        return args, {**kwargs, "cycle_span": span}
    return args, kwargs


def _is_tool_result(event: Any) -> bool:
    return isinstance(event, dict) and event.get("type") == "tool_result"


def _record_outcome(guard: Any, gate: Any, result_event: Any) -> bool:
    """Report the call's ``ToolResultEvent`` to the gate; True for a successful call.

    Strands hands a tool's failure (an exception, an unknown tool, a cancelled call) back to
    the model as a result with ``status: "error"``: that is the call's error."""
    try:
        if result_event is None:  # interrupted by a Strands interrupt: no result
            return False
        result = result_event.get("tool_result") or {}
        content = result.get("content")
        if result.get("status") == "error":
            exception = getattr(result_event, "exception", None)
            error_type = type(exception).__qualname__ if exception is not None else "ToolError"
            gate.set_error(error_type, _text(content))
            return False
        text = _text(content)
        gate.set_result(text if text is not None else content)
        return True
    except Exception as exc:  # never let our bookkeeping break the agent
        guard.telemetry.internal_error("strands.tool_outcome", exc)
        return False


def _text(content: Any) -> str | None:
    """The text of a result's content blocks, when they are all text."""
    if not isinstance(content, list):
        return None
    texts = [block.get("text") for block in content if isinstance(block, dict)]
    if len(texts) != len(content) or not all(isinstance(text, str) for text in texts):
        return None
    return "\n".join(texts)  # type: ignore[arg-type]


def concurrent_task_wrapper(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Wrap ``ConcurrentToolExecutor._task(agent, tool_use, ...)``, the coroutine each tool
    use runs in as an asyncio task: mark that tool use as this task's own."""
    tool_use = args[1] if len(args) > 1 else kwargs.get("tool_use")
    return _in_task(wrapped(*args, **kwargs), tool_use)


async def _in_task(task: Any, tool_use: Any) -> Any:
    token = _TASK_TOOL_USE.set(tool_use)
    try:
        return await task
    finally:
        _TASK_TOOL_USE.reset(token)


def concurrent_execute_wrapper(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Wrap ``ConcurrentToolExecutor._execute``: a carried interrupt leaves as itself."""
    return uncarried(wrapped(*args, **kwargs))
