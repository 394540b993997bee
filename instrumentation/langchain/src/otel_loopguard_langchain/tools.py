"""Tool spans and enforcement around ``BaseTool.run`` / ``BaseTool.arun``.

Every LangChain tool execution goes through these two methods: ``tool.invoke`` /
``tool.ainvoke``, LangGraph's ``ToolNode`` and the classic agent executors all end up here,
so one wrapper (the kit's tool gate, for both) sees every tool without knowing how it was
reached.

Why enforcement works from here: ``ToolNode(handle_tool_errors=True)`` turns any
``Exception`` from a tool into a message for the model, which would let a loop go on.
:class:`~otel_loopguard.LoopGuardInterrupt` derives from ``BaseException``, passes that
handler, and ends the graph run in the caller's ``invoke`` / ``stream``.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from opentelemetry.trace import Tracer

from otel_loopguard import get_guard
from otel_loopguard.kit.tool_gate import (
    GatedCall,
    function_tool_attributes,
    record_outcome,
    tool_gate_wrapper,
)
from otel_loopguard_langchain.runs import current_agent

# the handoff idiom of LangGraph multi-agent systems (swarm, supervisor): a tool named
# ``transfer_to_<agent>`` that returns a ``Command`` sending the graph to that agent
_HANDOFF_TOOL = re.compile(r"^(?:transfer|handoff)_to_(.+)$")

# LangChain's own bookkeeping arguments, never part of what the model asked for
_BOOKKEEPING_ARGS = frozenset({"callbacks", "run_manager", "config", "runtime", "state", "store"})


class _KeptKeys:
    """Which input keys survive ``_filter_injected_args``, per tool schema and key set.

    LangChain works the injected arguments out from the schema's type annotations on every
    call (hundreds of microseconds); the answer only depends on the schema and the keys the
    model sent, so it is remembered (bounded, least recently used dropped first).
    """

    def __init__(self, capacity: int = 1024) -> None:
        self._kept: OrderedDict[tuple[Any, ...], frozenset[str]] = OrderedDict()
        self._capacity = capacity
        self._lock = threading.Lock()

    def filter(self, tool: Any, tool_input: dict[str, Any]) -> dict[str, Any]:
        schema = getattr(tool, "args_schema", None)
        if not isinstance(schema, type):  # a JSON-schema dict: filtering is cheap there
            return tool._filter_injected_args(tool_input)
        key = (schema, type(tool), frozenset(tool_input))
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None:
                self._kept.move_to_end(key)
        if kept is None:
            kept = frozenset(tool._filter_injected_args(tool_input))
            with self._lock:
                self._kept[key] = kept
                if len(self._kept) > self._capacity:
                    self._kept.popitem(last=False)
        return {k: v for k, v in tool_input.items() if k in kept}


_KEPT_KEYS = _KeptKeys()


def tool_arguments(tool: Any, tool_input: Any) -> Any:
    """What the model asked for: the input without injected state, runtime or callbacks.

    Injected arguments (graph state, ``ToolRuntime``) change on every call; left in, they
    would make two identical requests look different to the repetition detectors.
    """
    if not isinstance(tool_input, dict):
        return tool_input
    try:
        return _KEPT_KEYS.filter(tool, tool_input)
    except Exception:  # older or unusual tools: drop only the well-known names
        return {k: v for k, v in tool_input.items() if k not in _BOOKKEEPING_ARGS}


def tool_outcome(output: Any) -> tuple[Any, str | None]:
    """``(content, error_text)`` of a tool's return value.

    With a ``tool_call_id`` LangChain wraps the result in a ``ToolMessage`` whose id differs
    on every call; the content is what repeats. A ``ToolMessage`` with ``status="error"`` is a
    tool error that ``handle_tool_error`` turned into text. A ``Command`` (handoffs, state
    updates) carries its tool message in ``update``.
    """
    status = getattr(output, "status", None)
    if hasattr(output, "tool_call_id") and hasattr(output, "content"):
        if status == "error":
            return output.content, str(output.content)
        return output.content, None
    update = getattr(output, "update", None)
    if update is not None and hasattr(output, "goto"):
        messages = update.get("messages") if isinstance(update, dict) else None
        contents = [getattr(m, "content", m) for m in messages or ()]
        return (contents[0] if len(contents) == 1 else contents), None
    return output, None


def _read_call(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> GatedCall:
    """``BaseTool.run(tool_input, ..., tool_call_id=None, ...)``: the call for the gate."""
    tool_input = args[0] if args else kwargs.get("tool_input")
    call_id = kwargs.get("tool_call_id")
    agent = current_agent()
    return GatedCall(
        str(instance.name),
        tool_arguments(instance, tool_input),
        call_id=call_id,
        agent=agent,
        attributes=span_attributes(instance, agent),
    )


def tool_wrapper(tracer: Tracer) -> Callable[..., Any]:
    """Wrap ``BaseTool.run`` and ``BaseTool.arun``."""
    return tool_gate_wrapper(tracer, _read_call, _report, package="langchain")


def span_attributes(tool: Any, agent: str | None) -> dict[str, str]:
    """GenAI tool attributes beyond the name, plus the agent the tool ran for (which
    sub-agent of a supervisor looped)."""
    return function_tool_attributes(getattr(tool, "description", None), agent)


def _report(gate: Any, output: Any, call: GatedCall) -> None:
    """Hand the outcome to the gate (the kit counts our errors here, never raises them)."""
    if not record_outcome(gate, *tool_outcome(output), "ToolException"):
        return
    handoff = _HANDOFF_TOOL.match(call.name)
    if handoff is not None:
        # the gate's span is ours, so no span processor will read it as a handoff: say so;
        # a STOP here is raised by the gate when the tool call ends (the run is stopped)
        get_guard().observe_handoff(
            call.agent,
            handoff.group(1),
            call_id=call.call_id,
            span=gate.span,
            raise_on_stop=False,
        )
