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

from collections.abc import AsyncGenerator
from typing import Any

from opentelemetry.trace import Tracer

from otel_loopguard import LoopGuardInterrupt
from otel_loopguard.kit.run_streams import aclose_stream
from otel_loopguard.kit.scoped_call import Wrapper
from otel_loopguard.kit.tool_gate import GatedCall, tool_gate_wrapper
from otel_loopguard_agno.runs import hold_back


def _read_call(function_call: Any) -> GatedCall | None:
    """The call to put through the gate (its tool name, arguments and call id), or None to
    run it untouched: a call without a name."""
    name = function_call.function.name
    if not isinstance(name, str) or not name:
        return None
    call_id = function_call.call_id
    return GatedCall(
        name,
        function_call.arguments,
        call_id=call_id if isinstance(call_id, str) else None,
        extra=function_call,
    )


def _call_of(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> GatedCall | None:
    """The gate's ``read``: the ``FunctionCall`` is the instance (an error reading it is
    counted as ``agno.tool_call`` and the call runs untouched)."""
    return _read_call(instance)


def _report_and_hold_back(gate: Any, outcome: Any, call: GatedCall) -> None:
    """:func:`_record_outcome`, and an async generator the tool returned is held back."""
    try:
        _record_outcome(gate, outcome, call)
    finally:
        _hold_back_from_task(call.extra, outcome)


def execute_wrapper(tracer: Tracer) -> Wrapper:
    """Wrap ``FunctionCall.execute()``."""
    return tool_gate_wrapper(tracer, _call_of, _record_outcome, package="agno", asynchronous=False)


def aexecute_wrapper(tracer: Tracer) -> Wrapper:
    """Wrap ``FunctionCall.aexecute()``: the same gate, and an async generator the tool
    returned is held back from the task that drains it."""
    return tool_gate_wrapper(
        tracer, _call_of, _report_and_hold_back, package="agno", asynchronous=True
    )


def _hold_back_from_task(function_call: Any, outcome: Any) -> None:
    """An async generator the tool returned is drained later in a task that would hang on
    our interrupt (see :mod:`.runs`): drain it through :func:`_held_back`. (An error
    here is counted as ``agno.tool_outcome`` by the gate and never breaks the agent.)"""
    if isinstance(function_call.result, AsyncGenerator):
        function_call.result = _held_back(function_call.result)
        if getattr(outcome, "result", None) is not None:
            outcome.result = function_call.result


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
        await aclose_stream(None, items)


def _record_outcome(gate: Any, outcome: Any, call: GatedCall) -> None:
    """Report a ``FunctionExecutionResult`` to the gate: a failure Agno caught is the
    call's error, else its result (unknown for a generator, which runs later)."""
    if getattr(outcome, "status", None) == "failure":
        error = getattr(outcome, "error", None)
        gate.set_error("ToolError", error if isinstance(error, str) else None)
        return
    result = getattr(outcome, "result", None)
    if not _is_lazy(result):
        gate.set_result(result)


def _is_lazy(result: Any) -> bool:
    return hasattr(result, "__next__") or hasattr(result, "__anext__")
