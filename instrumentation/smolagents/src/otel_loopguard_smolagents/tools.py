"""The tool gate around both ways smolagents runs a tool (the kit's gate for each).

- ``ToolCallingAgent.execute_tool_call`` sees every tool call of a tool-calling agent,
  also the failing ones (smolagents turns a tool's exception into
  ``AgentToolExecutionError`` and lets the model try again) and the unknown tools.
- ``Tool.__call__`` is how ``CodeAgent`` reaches tools from inside its Python executor.
  That executor catches ``Exception`` but lets a ``BaseException`` through, so
  ``LoopGuardInterrupt`` still reaches the caller. Inside ``execute_tool_call`` the same
  call is already a span, so a context flag keeps it from being counted twice.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable
from typing import Any

from opentelemetry.trace import Tracer

from otel_loopguard.kit.scoped_call import Wrapper
from otel_loopguard.kit.tool_gate import GatedCall, tool_gate_wrapper
from otel_loopguard_smolagents.runs import agent_name

# set while execute_tool_call already has the tool span open
_IN_TOOL_SPAN: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "otel_loopguard_smolagents_in_tool_span", default=False
)


def execute_tool_call_wrapper(tracer: Tracer) -> Wrapper:
    """Wrap ``ToolCallingAgent.execute_tool_call(tool_name, arguments)``."""
    gate = tool_gate_wrapper(
        tracer,
        _read_execute_tool_call,
        package="smolagents",
        report_error=_report_tool_cause,
        asynchronous=False,
    )

    def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        return gate(functools.partial(_in_tool_span, wrapped), instance, args, kwargs)

    return wrapper


def tool_call_wrapper(tracer: Tracer) -> Wrapper:
    """Wrap ``Tool.__call__``."""
    return tool_gate_wrapper(tracer, _read_tool_call, package="smolagents", asynchronous=False)


def _read_execute_tool_call(
    instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> GatedCall:
    tool_name = args[0] if args else kwargs.get("tool_name")
    arguments = args[1] if len(args) > 1 else kwargs.get("arguments")
    return GatedCall(str(tool_name), arguments, agent=agent_name(instance))


def _in_tool_span(wrapped: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    token = _IN_TOOL_SPAN.set(True)
    try:
        return wrapped(*args, **kwargs)
    finally:
        _IN_TOOL_SPAN.reset(token)


def _read_tool_call(
    instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> GatedCall | None:
    if _IN_TOOL_SPAN.get():
        return None
    name = getattr(instance, "name", None) or type(instance).__name__
    return GatedCall(name, _tool_arguments(args, kwargs))


def _tool_arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """What the tool was called with, as the model wrote it (positional or keywords)."""
    kwargs = {key: value for key, value in kwargs.items() if key != "sanitize_inputs_outputs"}
    if len(args) == 1 and not kwargs and isinstance(args[0], dict):
        return args[0]
    if args and kwargs:
        return {"args": list(args), **kwargs}
    if args:
        return args[0] if len(args) == 1 else list(args)
    return kwargs


def _report_tool_cause(call: Any, error: Exception, gated: GatedCall) -> None:
    """Report the tool's own error rather than smolagents' wrapper around it.

    ``AgentToolExecutionError`` always ends with "Please try again or use another tool",
    which would make every tool failure look retryable to the permanent-failure detector;
    the exception the tool raised is its ``__cause__``.
    """
    cause = error.__cause__
    if cause is None or not isinstance(cause, Exception):
        return
    try:
        message = str(cause)
    except Exception:
        message = None
    call.set_error(type(cause).__qualname__, message)
