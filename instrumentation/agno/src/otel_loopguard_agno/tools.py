"""The tool gate around every function call an Agno agent or team runs.

Why this hook point (agno 3.1): each function call the model asks for becomes a
``FunctionCall`` (the ``Function`` with the parsed arguments and the call id), and Agno runs
it through ``FunctionCall.execute()`` (sync runs, and sync tools of async runs, in a worker
thread that copies the context) or ``FunctionCall.aexecute()`` (async tools): the tool
hooks, the pre- and post-hook, the cached result and the entrypoint all run inside them, for
agents and teams alike (a team's ``delegate_task_to_member`` is a function call too). A
call the model made up, or whose arguments did not parse, never gets there: Agno answers it
with an error message the model reads.

``execute`` catches ``Exception`` around the tool and returns a ``FunctionExecutionResult``
with ``status="failure"`` and the error's text: the gate reports that as the call's error
(its type is lost; ``ToolError``). Its callers re-raise anything that escapes it, and
``asyncio.gather(..., return_exceptions=True)`` over the calls of one turn hands a
``BaseException`` back to Agno, which raises it once the turn's other calls have finished:
so the gate is used as designed, a vetoed call raises :class:`~otel_loopguard.LoopGuardInterrupt`
before the tool runs (nothing waits on it), a STOP decided on a call's result raises once
the call has run, and the interrupt leaves ``run`` / ``arun`` as itself (see :mod:`.runs`).

Not gated: a tool that returns a generator runs while Agno iterates it, after ``execute``
returned (the gate sees the call, not what the generator does later).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import Any

from opentelemetry.trace import Tracer

from otel_loopguard import LoopGuardInterrupt, get_guard
from otel_loopguard_agno.runs import Wrapper, hold_back


def _read_call(function_call: Any) -> tuple[str, Any, str | None]:
    """The call's tool name, arguments and call id."""
    name = function_call.function.name
    call_id = function_call.call_id
    return name, function_call.arguments, call_id if isinstance(call_id, str) else None


def _call_to_gate(guard: Any, function_call: Any) -> tuple[str, Any, str | None] | None:
    """The call to put through the gate, or None to run it untouched: a call without a
    name, or a call shape we do not know (counted and logged)."""
    try:
        name, arguments, call_id = _read_call(function_call)
    except Exception as exc:
        guard.telemetry.internal_error("agno.tool_call", exc)
        return None
    return (name, arguments, call_id) if isinstance(name, str) and name else None


def execute_wrapper(tracer: Tracer) -> Wrapper:
    """Wrap ``FunctionCall.execute()``."""

    def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        guard = get_guard()
        call = _call_to_gate(guard, instance)
        if call is None:
            return wrapped(*args, **kwargs)
        name, arguments, call_id = call
        with guard.tool_call(tracer, name, arguments, call_id=call_id) as gate:
            outcome = wrapped(*args, **kwargs)
            _record_outcome(guard, gate, outcome)
            return outcome

    return wrapper


def aexecute_wrapper(tracer: Tracer) -> Wrapper:
    """Wrap ``FunctionCall.aexecute()``."""

    async def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        guard = get_guard()
        call = _call_to_gate(guard, instance)
        if call is None:
            return await wrapped(*args, **kwargs)
        name, arguments, call_id = call
        with guard.tool_call(tracer, name, arguments, call_id=call_id) as gate:
            outcome = await wrapped(*args, **kwargs)
            _record_outcome(guard, gate, outcome)
        _hold_back_from_task(guard, instance, outcome)
        return outcome

    return wrapper


def _hold_back_from_task(guard: Any, function_call: Any, outcome: Any) -> None:
    """An async generator the tool returned is drained later in a task that would hang on
    our interrupt (see :mod:`.runs`): drain it through :func:`_held_back`."""
    try:
        if isinstance(function_call.result, AsyncGenerator):
            function_call.result = _held_back(function_call.result)
            if getattr(outcome, "result", None) is not None:
                outcome.result = function_call.result
    except Exception as exc:  # never let our bookkeeping break the agent
        guard.telemetry.internal_error("agno.tool_outcome", exc)


async def _held_back(items: AsyncGenerator[Any, None]) -> AsyncGenerator[Any, None]:
    """Yield what the tool's async generator yields; an interrupt raised in it (an agent it
    runs was stopped) is held back in the run, and the generator ends."""
    try:
        async for item in items:
            yield item
    except LoopGuardInterrupt as interrupt:
        if not hold_back(interrupt):
            raise
    finally:
        await items.aclose()


def _record_outcome(guard: Any, gate: Any, outcome: Any) -> None:
    """Report a ``FunctionExecutionResult`` to the gate: a failure Agno caught is the
    call's error, else its result (unknown for a generator, which runs later)."""
    try:
        if getattr(outcome, "status", None) == "failure":
            error = getattr(outcome, "error", None)
            gate.set_error("ToolError", error if isinstance(error, str) else None)
            return
        result = getattr(outcome, "result", None)
        if not _is_lazy(result):
            gate.set_result(result)
    except Exception as exc:  # never let our bookkeeping break the agent
        guard.telemetry.internal_error("agno.tool_outcome", exc)


def _is_lazy(result: Any) -> bool:
    return hasattr(result, "__next__") or hasattr(result, "__anext__")
