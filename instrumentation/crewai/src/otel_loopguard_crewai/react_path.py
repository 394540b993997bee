"""CrewAI's ReAct text path (``Action:`` / ``Action Input:``), seen at two levels.

``ToolUsage.use`` / ``ause`` answers one parsed ``Action``. Inside it CrewAI may answer
without running the tool (its cache; its refusal of a call identical to the previous
one, "I tried reusing the same input"), or run the tool several times: ``_use`` calls
``CrewStructuredTool.invoke`` with the schema's arguments and, when that raises, again
with all of them, and retries the whole on ``Exception``. A gate around ``use`` alone
would let every one of those executions run before it could judge the first.

So each real execution (``CrewStructuredTool.invoke`` / ``ainvoke`` while a ``use`` is in
progress) is its own ``execute_tool`` span and gate: the tool's own exception is its
error, the second failing execution can stop the third. A ``use`` that ran nothing gets
one span after the fact for the answer the model saw (the raw answer, without the
tool-format reminder CrewAI appends every few uses), so repeats answered from the cache
still count. A stopped run is vetoed when ``use`` starts.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Any

from opentelemetry.trace import Tracer

from otel_loopguard import get_guard
from otel_loopguard.kit.scoped_call import PlainScope, Wrapper, scoped_wrapper
from otel_loopguard.kit.tool_gate import GatedCall, tool_gate_wrapper
from otel_loopguard_crewai.runs import agent_name
from otel_loopguard_crewai.tools import report_failure


@dataclass(slots=True)
class _UseInProgress:
    agent: str | None
    executed: bool = False


_USE: contextvars.ContextVar[_UseInProgress | None] = contextvars.ContextVar(
    "otel_loopguard_crewai_tool_usage", default=None
)


def _is_tool_failure(value: Any) -> bool:
    return type(value).__name__ == "ToolFailure" and hasattr(value, "reason")


def _tool_input(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return kwargs["input"] if "input" in kwargs else (args[0] if args else None)


# -- ToolUsage.use / ause ---------------------------------------------------------------------


def tool_usage_wrapper(tracer: Tracer) -> Wrapper:
    """Wrap ``ToolUsage.use(calling, tool_string)`` and ``ToolUsage.ause``."""

    def open_scope(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        calling = args[0] if args else kwargs.get("calling")
        if not hasattr(calling, "tool_name"):  # a parse error, reported by crewai itself
            return None
        return _Use(tracer, instance, calling)

    return scoped_wrapper(open_scope)


class _Use(PlainScope):
    """One ``use``: a stopped run is vetoed when it starts; the executions inside it are
    gated one by one; a use that ran nothing gets one span after the fact."""

    __slots__ = ("_calling", "_instance", "_state", "_token", "_tracer")

    def __init__(self, tracer: Tracer, instance: Any, calling: Any) -> None:
        self._tracer = tracer
        self._instance = instance
        self._calling = calling
        self._state: _UseInProgress | None = None
        self._token: contextvars.Token[Any] | None = None

    def __enter__(self) -> Any:
        get_guard().check_current_run()  # enforce: a stopped run answers nothing more
        self._state = _UseInProgress(agent_name(getattr(self._instance, "agent", None)))
        self._token = _USE.set(self._state)
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> Any:
        if self._token is not None:
            _USE.reset(self._token)
        return None

    def after(self, result: Any) -> Any:
        state = self._state
        if state is None or state.executed:
            return result
        with get_guard().tool_call(
            self._tracer,
            str(getattr(self._calling, "tool_name", "") or "unknown"),
            getattr(self._calling, "arguments", None),
            agent_name=state.agent,
        ) as call:
            report_failure(call, getattr(self._instance, "last_failure", None))
            raw = getattr(self._instance, "get_last_raw_result", None)
            call.set_result(raw(result) if callable(raw) else result)
        return result


# -- CrewStructuredTool.invoke / ainvoke: the real executions ---------------------------------


def structured_tool_wrapper(tracer: Tracer) -> Wrapper:
    """Wrap ``CrewStructuredTool.invoke`` and ``ainvoke``: each one a gated execution, while
    a ``use`` is in progress (not the native path, which has its own span)."""
    return tool_gate_wrapper(tracer, _read_execution, _report_execution, package="crewai")


def _read_execution(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    state = _USE.get()
    if state is None:  # not the ReAct path
        return None
    state.executed = True
    from crewai.utilities.string_utils import sanitize_tool_name

    return GatedCall(
        sanitize_tool_name(str(getattr(instance, "name", "") or "unknown")),
        _tool_input(args, kwargs),
        agent=state.agent,
    )


def _report_execution(call: Any, result: Any, gated: GatedCall) -> None:
    if _is_tool_failure(result):
        report_failure(call, result)
    call.set_result(result)
