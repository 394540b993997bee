"""A wrapt wrapper that runs the wrapped call inside a scope, written once for sync and async.

Framework packages wrap methods that come in pairs (``run`` / ``arun``, ``invoke`` /
``ainvoke``, ``execute`` / ``aexecute``) and must do the same around both: open something
before the call (a tool gate, a model turn, an agent run), look at the result while it is
still open, act once it is closed. :func:`scoped_wrapper` takes that "something" as a
:class:`Scope` and gives one wrapt wrapper for both methods: when ``wrapped`` is a coroutine
function the scope is opened, entered and left inside the coroutine (in the task that awaits
it, so context variables set by the scope are set and reset in one context), else around
the plain call.

The tool gate (:mod:`otel_loopguard.kit.tool_gate`), the model-turn wrapper
(:mod:`otel_loopguard.kit.model_turn`) and the agent-run wrapper
(:mod:`otel_loopguard.kit.agent_runs`) are scopes; a package with a hook of its own writes
its scope and gets both flavours from this module too.

Async is told by ``inspect.iscoroutinefunction(wrapped)`` (it sees through bound methods,
``functools.partial`` and wrapt proxies of an ``async def``), unless the wrapper is built
with ``asynchronous=True`` / ``False``. A plain function that turns out to return an
awaitable (a sync decorator around an ``async def``) keeps its scope open until the
awaitable is awaited; the scope was entered in the caller's context then, which is right
when the caller awaits it at once, not when it hands it to a task of its own: give
``asynchronous=True`` for such a method.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Protocol

#: a wrapt wrapper: ``wrapper(wrapped, instance, args, kwargs)``
Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]


class Scope(Protocol):
    """What :func:`scoped_wrapper` runs the call in.

    ``__enter__`` before the call (it may raise to refuse the call: a veto), then, when the
    scope has it, ``request(args, kwargs)`` for the arguments the call is made with (a
    model turn that adds a recommendation to the request),
    :meth:`inside` with the call's result while the scope is still open, ``__exit__``
    (also when the call raised), then :meth:`after` with what :meth:`inside` returned, once
    the scope is closed; the wrapper returns what :meth:`after` returns.
    """

    def __enter__(self) -> Any: ...

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> Any: ...

    def inside(self, result: Any) -> Any: ...

    def after(self, result: Any) -> Any: ...


#: ``open_scope(instance, args, kwargs)``: the scope for this call, or ``None`` to run the
#: call untouched (a call shape the package does not know, a call outside any run)
OpenScope = Callable[[Any, tuple[Any, ...], dict[str, Any]], "Scope | None"]


class PlainScope:
    """A scope that does nothing: subclass it and override what you need."""

    __slots__ = ()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> Any:
        return None

    def inside(self, result: Any) -> Any:
        return result

    def after(self, result: Any) -> Any:
        return result


def is_async(wrapped: Any) -> bool:
    """Is ``wrapped`` a coroutine function (an ``async def``, bound or not, or a proxy of one)?"""
    try:
        return inspect.iscoroutinefunction(wrapped)
    except Exception:  # pragma: no cover - an object whose attributes fail to read
        return False


def scoped_wrapper(open_scope: OpenScope, *, asynchronous: bool | None = None) -> Wrapper:
    """A wrapt wrapper running each call inside ``open_scope(instance, args, kwargs)``, sync
    or async alike (see the module docstring)."""

    def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        if asynchronous if asynchronous is not None else is_async(wrapped):
            return _in_scope_async(open_scope, wrapped, instance, args, kwargs)
        scope = open_scope(instance, args, kwargs)
        if scope is None:
            return wrapped(*args, **kwargs)
        scope.__enter__()
        try:
            request = getattr(scope, "request", None)
            if request is not None:
                args, kwargs = request(args, kwargs)
            result = wrapped(*args, **kwargs)
            if asynchronous is None and inspect.isawaitable(result):
                # a plain function that returns an awaitable (a sync decorator around an
                # ``async def``): the scope stays open until it is awaited
                return _awaited_in_scope(scope, result)
        except BaseException as exc:
            if not scope.__exit__(type(exc), exc, exc.__traceback__):
                raise
            return scope.after(None)
        return _returned(scope, result)

    return wrapper


def _returned(scope: Scope, result: Any) -> Any:
    """The call returned ``result``: :meth:`Scope.inside`, leave the scope, then
    :meth:`Scope.after`."""
    try:
        result = scope.inside(result)
    except BaseException as exc:
        if not scope.__exit__(type(exc), exc, exc.__traceback__):
            raise
        return scope.after(None)
    scope.__exit__(None, None, None)
    return scope.after(result)


async def _awaited_in_scope(scope: Scope, awaitable: Any) -> Any:
    try:
        result = await awaitable
    except BaseException as exc:
        if not scope.__exit__(type(exc), exc, exc.__traceback__):
            raise
        return scope.after(None)
    return _returned(scope, result)


async def _in_scope_async(
    open_scope: OpenScope,
    wrapped: Callable[..., Any],
    instance: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    scope = open_scope(instance, args, kwargs)
    if scope is None:
        return await wrapped(*args, **kwargs)
    with scope:
        request = getattr(scope, "request", None)
        if request is not None:
            args, kwargs = request(args, kwargs)
        result = scope.inside(await wrapped(*args, **kwargs))
    return scope.after(result)
