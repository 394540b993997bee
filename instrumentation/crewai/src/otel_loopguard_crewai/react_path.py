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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from opentelemetry.trace import Tracer


@dataclass(slots=True)
class _UseInProgress:
    agent: str | None
    executed: bool = False


_USE: contextvars.ContextVar[_UseInProgress | None] = contextvars.ContextVar(
    "otel_loopguard_crewai_tool_usage", default=None
)


def report_failure(call: Any, failure: Any) -> None:
    """A ``ToolFailure`` (returned, not raised) becomes the call's error."""
    if failure is None:
        return
    reason = getattr(failure, "reason", None)
    reason_name = getattr(reason, "value", None) or str(reason or "tool_failure")
    # for a raised exception crewai keeps its class name in `code`
    error_type = getattr(failure, "code", None) if reason_name == "exception" else None
    call.set_error(error_type or reason_name, getattr(failure, "message", None))


def _is_tool_failure(value: Any) -> bool:
    return type(value).__name__ == "ToolFailure" and hasattr(value, "reason")


def _agent_name(agent: Any) -> str | None:
    role = getattr(agent, "role", None)
    return str(role) if role else None


def _tool_input(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return kwargs["input"] if "input" in kwargs else (args[0] if args else None)


class ReactPathWrappers:
    """Mixed into :class:`~otel_loopguard_crewai.wrappers.CrewAIWrappers`, which sets both."""

    _tracer: Tracer
    _guard: Callable[[], Any]

    # -- ToolUsage.use / ause -----------------------------------------------------------------

    def _start_use(self, instance: Any) -> tuple[_UseInProgress, contextvars.Token[Any]]:
        self._guard().check_current_run()  # enforce: a stopped run answers nothing more
        state = _UseInProgress(_agent_name(getattr(instance, "agent", None)))
        return state, _USE.set(state)

    def _answered_without_running(
        self, instance: Any, calling: Any, state: _UseInProgress, result: Any
    ) -> None:
        if state.executed:
            return
        with self._guard().tool_call(
            self._tracer,
            str(getattr(calling, "tool_name", "") or "unknown"),
            getattr(calling, "arguments", None),
            agent_name=state.agent,
        ) as call:
            report_failure(call, getattr(instance, "last_failure", None))
            raw = getattr(instance, "get_last_raw_result", None)
            call.set_result(raw(result) if callable(raw) else result)

    def tool_usage_use(
        self, wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        calling = args[0] if args else kwargs.get("calling")
        if not hasattr(calling, "tool_name"):  # a parse error, reported by crewai itself
            return wrapped(*args, **kwargs)
        state, token = self._start_use(instance)
        try:
            result = wrapped(*args, **kwargs)
        finally:
            _USE.reset(token)
        self._answered_without_running(instance, calling, state, result)
        return result

    async def tool_usage_ause(
        self, wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        calling = args[0] if args else kwargs.get("calling")
        if not hasattr(calling, "tool_name"):
            return await wrapped(*args, **kwargs)
        state, token = self._start_use(instance)
        try:
            result = await wrapped(*args, **kwargs)
        finally:
            _USE.reset(token)
        self._answered_without_running(instance, calling, state, result)
        return result

    # -- CrewStructuredTool.invoke / ainvoke: the real executions -------------------------------

    def _execution(self, instance: Any, state: _UseInProgress, tool_input: Any) -> Any:
        state.executed = True
        from crewai.utilities.string_utils import sanitize_tool_name

        return self._guard().tool_call(
            self._tracer,
            sanitize_tool_name(str(getattr(instance, "name", "") or "unknown")),
            tool_input,
            agent_name=state.agent,
        )

    def structured_tool_invoke(
        self, wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        state = _USE.get()
        if state is None:  # not the ReAct path (the native path has its own span)
            return wrapped(*args, **kwargs)
        with self._execution(instance, state, _tool_input(args, kwargs)) as call:
            result = wrapped(*args, **kwargs)
            if _is_tool_failure(result):
                report_failure(call, result)
            call.set_result(result)
        return result

    async def structured_tool_ainvoke(
        self, wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        state = _USE.get()
        if state is None:
            return await wrapped(*args, **kwargs)
        with self._execution(instance, state, _tool_input(args, kwargs)) as call:
            result = await wrapped(*args, **kwargs)
            if _is_tool_failure(result):
                report_failure(call, result)
            call.set_result(result)
        return result
