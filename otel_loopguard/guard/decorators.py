"""Loop guarding for agents written without a framework.

.. code-block:: python

    from otel_loopguard.guard.decorators import agent_run, loopguard_tool

    @loopguard_tool
    def search(query: str) -> str: ...

    with agent_run("researcher", conversation_id=session_id):
        while not done:
            ...  # ask the model, then call the tools it chose
            search(query)  # an `execute_tool search` span; raises LoopGuardInterrupt at STOP
                           # in enforce mode (a BaseException: `except Exception` won't eat it)

``@loopguard_tool`` works on plain and ``async`` functions. Each call becomes a semconv
``execute_tool {name}`` span (``gen_ai.operation.name``, ``gen_ai.tool.name``,
``gen_ai.tool.call.id`` when given; arguments and result only with
``OTEL_LOOPGUARD_CAPTURE_CONTENT=true``) and goes through the enforcement gate. For code
that is not a function of its own, ``tool_span(name, arguments)`` is the same gate as a
context manager. Arguments may be anything (cyclic, not JSON-able): they are only
signed, capped, never serialized unless content capture is on, and never make the call fail.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, overload

from opentelemetry import trace

from otel_loopguard.guard import LoopGuard, get_guard

F = TypeVar("F", bound=Callable[..., Any])

_TRACER_NAME = "otel_loopguard.tools"


def _tracer(tracer: trace.Tracer | None) -> trace.Tracer:
    return tracer if tracer is not None else trace.get_tracer(_TRACER_NAME)


def agent_run(
    agent_name: str | None,
    conversation_id: str | None = None,
    *,
    tracer: trace.Tracer | None = None,
    guard: LoopGuard | None = None,
) -> Any:
    """An ``invoke_agent`` span that keys the run; ends with ``loopguard.run.state``."""
    return (guard or get_guard()).agent_run(_tracer(tracer), agent_name, conversation_id)


def tool_span(
    tool_name: str,
    arguments: Any = None,
    *,
    call_id: str | None = None,
    agent_name: str | None = None,
    tracer: trace.Tracer | None = None,
    guard: LoopGuard | None = None,
) -> Any:
    """The gate as a context manager; call ``.set_result(value)`` on what it yields."""
    return (guard or get_guard()).tool_call(
        _tracer(tracer), tool_name, arguments, call_id, agent_name
    )


@overload
def loopguard_tool(func: F) -> F: ...


@overload
def loopguard_tool(
    func: None = None,
    *,
    name: str | None = None,
    tracer: trace.Tracer | None = None,
    guard: LoopGuard | None = None,
) -> Callable[[F], F]: ...


def loopguard_tool(
    func: Any = None,
    *,
    name: str | None = None,
    tracer: trace.Tracer | None = None,
    guard: LoopGuard | None = None,
) -> Any:
    """Decorate a tool function (sync or async) so every call goes through the gate."""
    if func is None:
        return functools.partial(loopguard_tool, name=name, tracer=tracer, guard=guard)

    tool_name = name or getattr(func, "__name__", None) or "tool"
    try:
        signature: inspect.Signature | None = inspect.signature(func)
    except (TypeError, ValueError):
        signature = None

    def arguments_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if signature is not None:
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError:
                pass  # the call itself will fail the same way; sign what we were given
            else:
                return dict(bound.arguments)
        return {"args": list(args), "kwargs": kwargs} if kwargs or args else None

    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            with (guard or get_guard()).tool_call(
                _tracer(tracer), tool_name, arguments_of(args, kwargs)
            ) as call:
                result = await func(*args, **kwargs)
                call.set_result(result)
                return result

        return async_wrapper

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with (guard or get_guard()).tool_call(
            _tracer(tracer), tool_name, arguments_of(args, kwargs)
        ) as call:
            result = func(*args, **kwargs)
            call.set_result(result)
            return result

    return wrapper
