"""Tool spans and the gate around ``FunctionTool.call`` / ``FunctionTool.acall``.

Every function tool runs through these two methods, whether an agent workflow, a query
pipeline or the application calls it (``tool(...)`` is ``call``); one wrapper, the kit's
tool gate, serves both. The gate raises
:class:`~otel_loopguard.LoopGuardInterrupt` at STOP in ``enforce`` mode; inside an agent
workflow :mod:`otel_loopguard_llamaindex.workflow` carries it to the caller.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any

from opentelemetry.trace import Tracer

from otel_loopguard.kit.tool_gate import (
    GatedCall,
    function_tool_attributes,
    record_outcome,
    tool_gate_wrapper,
)

# the agent a workflow is running a tool for, and the model's id for the call (set by the
# workflow wrappers; a tool called outside an agent workflow has neither)
CURRENT_AGENT: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "otel_loopguard_llamaindex_agent", default=None
)
CURRENT_CALL_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "otel_loopguard_llamaindex_call_id", default=None
)


def tool_arguments(tool: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """What the model asked for: keyword arguments without the workflow ``Context``.

    The injected context is a different object on every run and means nothing to loop
    detection; positional arguments (rare for model-called tools) are kept under ``args``.
    """
    ctx_param = getattr(tool, "ctx_param_name", None)
    arguments = {k: v for k, v in kwargs.items() if k != ctx_param}
    if args:
        arguments["args"] = list(args)
    return arguments


def tool_outcome(output: Any) -> tuple[Any, str | None]:
    """``(content, error_text)`` of a ``ToolOutput``; ``is_error`` outputs are tool errors."""
    content = getattr(output, "content", output)
    if getattr(output, "is_error", False):
        return content, str(content)
    return content, None


def span_attributes(tool: Any, agent: str | None) -> dict[str, str]:
    """GenAI tool attributes beyond the name, plus the agent the tool ran for."""
    description = getattr(getattr(tool, "metadata", None), "description", None)
    return function_tool_attributes(description, agent)


def _read_call(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> GatedCall:
    name = str(instance.metadata.get_name())
    agent = CURRENT_AGENT.get()
    return GatedCall(
        name,
        tool_arguments(instance, args, kwargs),
        call_id=CURRENT_CALL_ID.get(),
        agent=agent,
        attributes=span_attributes(instance, agent),
    )


def _report(gate: Any, output: Any, call: GatedCall) -> None:
    """Hand the outcome to the gate (the kit counts our errors here, never raises them)."""
    record_outcome(gate, *tool_outcome(output))


def tool_wrapper(tracer: Tracer) -> Callable[..., Any]:
    """Wrap ``FunctionTool.call`` and ``FunctionTool.acall``."""
    return tool_gate_wrapper(tracer, _read_call, _report, package="llamaindex")
