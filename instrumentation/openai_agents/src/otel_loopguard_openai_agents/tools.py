"""``execute_tool {tool}`` spans around function-tool executions, and handoff events."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from opentelemetry.trace import Tracer

from otel_loopguard import get_guard
from otel_loopguard.kit.scoped_call import Wrapper
from otel_loopguard.kit.tool_gate import GatedCall, json_arguments, tool_gate_wrapper

# where :func:`failure_wrapper` leaves the exception a tool body raised, on its ToolContext
_TOOL_ERROR_ATTRIBUTE = "_otel_loopguard_tool_error"


def tool_wrapper(tracer: Tracer) -> Wrapper:
    """Wrap ``_invoke_function_tool_with_metadata(*, function_tool, context, arguments)``.

    The SDK's failure handler turns an exception raised by the tool body into a text for
    the model, and its default text hides the exception ("An error occurred while running
    the tool. Please try again."). :func:`failure_wrapper` keeps the exception itself, and
    the call is reported as that error: the failure detectors need "403 permission
    denied", not a generic "please try again" that reads as retryable.
    """
    return tool_gate_wrapper(
        tracer, _read_call, _record_outcome, package="openai_agents", asynchronous=True
    )


def _read_call(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> GatedCall | None:
    name = getattr(kwargs.get("function_tool"), "name", None)
    if not isinstance(name, str):  # a call shape we do not know: stay out of the way
        return None
    context = kwargs.get("context")
    return GatedCall(
        name,
        _decode_arguments(kwargs.get("arguments")),
        call_id=getattr(context, "tool_call_id", None),
        agent=getattr(getattr(context, "agent", None), "name", None),
        extra=context,
    )


def failure_wrapper(
    wrapped: Callable[..., Awaitable[Any]],
    instance: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Awaitable[Any]:
    """Wrap ``maybe_invoke_function_tool_failure_error_function(*, function_tool, context,
    error)``, which the SDK calls with the exception a tool body raised."""
    error = kwargs.get("error")
    context = kwargs.get("context")
    if isinstance(error, BaseException) and context is not None:
        # a context that takes no attributes: the SDK's text is reported instead
        with contextlib.suppress(Exception):
            setattr(context, _TOOL_ERROR_ATTRIBUTE, error)
    return wrapped(*args, **kwargs)


def handoff_wrapper(tracer: Tracer) -> Wrapper:
    """Wrap ``execute_handoffs``: the first requested ``transfer_to_<agent>`` is the handoff.

    The handoff gets an ``execute_tool transfer_to_<agent>`` span naming both agents
    (``gen_ai.agent.name`` and ``to_agent``, as the SDK's own handoff spans do). That span
    is not the gate's: the span processor's dialect mapping reads it as a handoff event,
    which feeds the handoff-cycle detector. We only enforce: a stopped run does not hand
    off, and a handoff that closes one cycle too many interrupts the run.
    """

    async def wrapper(
        wrapped: Callable[..., Awaitable[Any]],
        instance: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        handoffs = kwargs.get("run_handoffs") or ()
        first = handoffs[0] if handoffs else None
        tool_call = getattr(first, "tool_call", None)
        name = getattr(tool_call, "name", None)
        if not isinstance(name, str):
            return await wrapped(*args, **kwargs)
        guard = get_guard()
        guard.check_current_run()
        with tracer.start_as_current_span(
            f"execute_tool {name}", attributes=_handoff_attributes(name, first, kwargs)
        ):
            step = await wrapped(*args, **kwargs)
        guard.check_current_run()
        return step

    return wrapper


def _handoff_attributes(name: str, handoff_run: Any, kwargs: dict[str, Any]) -> dict[str, str]:
    attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
    call_id = getattr(getattr(handoff_run, "tool_call", None), "call_id", None)
    source = getattr(kwargs.get("public_agent"), "name", None)
    target = getattr(getattr(handoff_run, "handoff", None), "agent_name", None)
    for key, value in (
        ("gen_ai.tool.call.id", call_id),
        ("gen_ai.agent.name", source),
        ("from_agent", source),
        ("to_agent", target),
    ):
        if isinstance(value, str) and value:
            attributes[key] = value
    return attributes


def _record_outcome(call: Any, invocation: Any, gated: GatedCall) -> None:
    """The invocation's outcome to the gate (the kit counts our errors, never raises them)."""
    context = gated.extra
    output = getattr(invocation, "output", invocation)
    error = getattr(context, _TOOL_ERROR_ATTRIBUTE, None)
    if isinstance(error, BaseException):
        delattr(context, _TOOL_ERROR_ATTRIBUTE)
        call.set_error(type(error).__qualname__, str(error))
    elif getattr(invocation, "is_sdk_generated_error", False) is True:  # e.g. a timeout
        call.set_error("ToolError", output if isinstance(output, str) else None)
    else:
        call.set_result(output)


def _decode_arguments(arguments: Any) -> Any:
    """The model's JSON arguments as a value, so signatures ignore key order and spacing."""
    return json_arguments(arguments, max_chars=65_536)
