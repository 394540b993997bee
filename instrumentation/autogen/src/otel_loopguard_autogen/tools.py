"""The tool gate around AssistantAgent's tool calls, and the handoffs they end in.

Why these hook points (autogen-agentchat 0.7):

- ``AssistantAgent._execute_tool_call`` (a static method) runs one ``FunctionCall`` of the
  model, with its call id, through the agent's workbench, for plain and streamed runs, in
  a team or alone. The workbench turns a tool's exception into an error ``ToolResult``; we
  report that as the call's error.
- The agent runs a turn's calls with ``asyncio.gather`` in a task and learns they are done
  from a ``None`` put on a queue after the gather: any exception escaping one call leaves
  the agent waiting on that queue forever. So a vetoed call (and a STOP decided when a call
  ends) is answered with an error result the model never reads, and the interrupt is
  raised right after the turn's tools, from ``_check_and_handle_handoff``.
- ``AssistantAgent._check_and_handle_handoff`` (static) runs after every batch of tool
  calls and returns the ``HandoffMessage`` response when the model asked for a handoff
  (only the first requested handoff happens): the handoff reported there has its real
  source and target, whatever the handoff tool is called. The handoff tool call itself
  (``transfer_to_<agent>``) does not go through the gate, or it would count twice.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry.trace import Tracer

from otel_loopguard import LoopGuardInterrupt, get_guard
from otel_loopguard.kit.scoped_call import Wrapper
from otel_loopguard.kit.tool_gate import json_arguments
from otel_loopguard_autogen.runs import hold_back, interrupt_for_host, raise_if_stopped

STOPPED_RESULT = "Error: the run was stopped by otel-loopguard; this tool call did not run."


def tool_wrapper(tracer: Tracer) -> Wrapper:
    """Wrap ``AssistantAgent._execute_tool_call(*, tool_call, workbench, handoff_tools,
    agent_name, cancellation_token, stream)``."""

    async def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        guard = get_guard()
        call = kwargs.get("tool_call")
        try:
            name = getattr(call, "name", None)
            if not isinstance(name, str) or _is_handoff(name, kwargs.get("handoff_tools")):
                return await wrapped(*args, **kwargs)
            arguments = decode_arguments(getattr(call, "arguments", None))
            call_id = getattr(call, "id", None)
            agent_name = kwargs.get("agent_name")
        except Exception as exc:  # a call shape we do not know: stay out of the way
            guard.telemetry.internal_error("autogen.tool_call", exc)
            return await wrapped(*args, **kwargs)
        outcome: Any = None
        try:
            with guard.tool_call(
                tracer,
                name,
                arguments,
                call_id=call_id if isinstance(call_id, str) else None,
                agent_name=agent_name if isinstance(agent_name, str) else None,
            ) as gate:
                outcome = await wrapped(*args, **kwargs)
                _record_outcome(guard, gate, outcome)
            return outcome
        except LoopGuardInterrupt as interrupt:
            # raised past asyncio.gather it would hang the agent (module docstring); the
            # run is stopped and _check_and_handle_handoff raises once the batch is done
            hold_back(interrupt)
            return outcome if outcome is not None else _stopped_result(call)

    return wrapper


def handoff_wrapper(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Wrap ``AssistantAgent._check_and_handle_handoff(*, model_result,
    executed_calls_and_results, inner_messages, handoffs, agent_name)``."""
    guard = get_guard()
    try:
        raise_if_stopped(guard)  # a call of this batch was vetoed: stop before going on
        response = wrapped(*args, **kwargs)
        try:
            message = getattr(response, "chat_message", None)
            target = getattr(message, "target", None)
            source = getattr(message, "source", None) or kwargs.get("agent_name")
        except Exception as exc:  # never let our bookkeeping break the agent
            guard.telemetry.internal_error("autogen.handoff", exc)
            return response
        if isinstance(target, str) and target:
            guard.observe_handoff(source if isinstance(source, str) else None, target)
        return response
    except LoopGuardInterrupt as interrupt:
        raise interrupt_for_host(interrupt) from interrupt.__cause__


def _is_handoff(name: str, handoff_tools: Any) -> bool:
    return any(getattr(tool, "name", None) == name for tool in handoff_tools or ())


def _record_outcome(guard: Any, gate: Any, outcome: Any) -> None:
    """``(FunctionCall, FunctionExecutionResult)``: an error result is the call's error."""
    try:
        result = outcome[1]
        content = getattr(result, "content", None)
        if getattr(result, "is_error", False) is True:
            gate.set_error("ToolError", content if isinstance(content, str) else None)
        else:
            gate.set_result(content)
    except Exception as exc:  # never let our bookkeeping break the agent
        guard.telemetry.internal_error("autogen.tool_outcome", exc)


def _stopped_result(call: Any) -> tuple[Any, Any]:
    from autogen_core.models import FunctionExecutionResult

    return (
        call,
        FunctionExecutionResult(
            content=STOPPED_RESULT,
            call_id=str(getattr(call, "id", "")),
            is_error=True,
            name=str(getattr(call, "name", "")),
        ),
    )


def decode_arguments(arguments: Any) -> Any:
    """The model's JSON arguments as a value, so signatures ignore key order and spacing."""
    return json_arguments(arguments, max_chars=65_536)
