"""Another instrumentation's iterable-only proxies, applied before our package's wrappers.

OpenInference's Google ADK instrumentation hands back ``Runner.run_async``'s generator in a
``wrapt.ObjectProxy`` whose ``__aiter__`` is an async generator (its span around the loop) and
which has no ``__anext__`` of its own (``proxy.__anext__`` reaches the generator it wraps, past
their code). Any stream a package reads may be such a proxy: :func:`theirs_applied_first`
puts one around what the given functions return (an async generator or a plain one), under
our package's wrappers, as ``opentelemetry-instrument`` may apply theirs first (around an
iterator that is no generator, a model SDK's stream, too).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import wrapt


class AsyncIterableOnly(wrapt.ObjectProxy):  # type: ignore[misc]
    """``async for`` through an async generator of its own; no ``__anext__``."""

    def __init__(self, wrapped: Any, seen: list[str]) -> None:
        super().__init__(wrapped)
        self._self_seen = seen

    async def __aiter__(self) -> Any:
        async for item in self.__wrapped__:
            self._self_seen.append(type(item).__name__)
            yield item


class SyncIterableOnly(wrapt.ObjectProxy):  # type: ignore[misc]
    """``for`` through a generator of its own; no ``__next__``."""

    def __init__(self, wrapped: Any, seen: list[str]) -> None:
        super().__init__(wrapped)
        self._self_seen = seen

    def __iter__(self) -> Any:
        for item in self.__wrapped__:
            self._self_seen.append(type(item).__name__)
            yield item


def _proxied(result: Any, seen: list[str]) -> Any:
    kind = type(result)
    if inspect.isasyncgen(result) or hasattr(kind, "__anext__"):  # an SDK's stream too
        return AsyncIterableOnly(result, seen)
    if inspect.isgenerator(result) or hasattr(kind, "__next__"):
        return SyncIterableOnly(result, seen)
    return result


def _proxying(seen: list[str]) -> Any:
    def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        result = wrapped(*args, **kwargs)
        if inspect.iscoroutine(result):  # an async request: the stream it resolves to

            async def proxied() -> Any:
                return _proxied(await result, seen)

            return proxied()
        return _proxied(result, seen)

    return wrapper


@contextmanager
def theirs_applied_first(harness: Any, targets: list[tuple[str, str]]) -> Iterator[list[str]]:
    """Our package uninstrumented, each ``(module, "Class.method")`` of ``targets`` wrapped so
    that what it returns is an iterable-only proxy, our package instrumented again (its
    wrappers outside those proxies); yields the list of items their proxies passed on (their
    code ran: it was not bypassed). Everything put back after."""
    harness.uninstrument()
    originals = []
    seen: list[str] = []
    for module, name in targets:
        parent, attribute, original = wrapt.resolve_path(module, name)
        if isinstance(parent, type):  # as the class holds it (a classmethod stays one)
            original = vars(parent).get(attribute, original)
        originals.append((parent, attribute, original))
        wrapt.wrap_function_wrapper(module, name, _proxying(seen))
    harness.reinstrument()
    try:
        yield seen
    finally:
        harness.uninstrument()
        for parent, attribute, original in reversed(originals):
            setattr(parent, attribute, original)
        harness.reinstrument()
