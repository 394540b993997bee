"""kit.scoped_call: one wrapt wrapper, a scope around a plain call or inside a coroutine."""

from __future__ import annotations

import asyncio
import contextvars
import functools
from typing import Any

import pytest
import wrapt

from otel_loopguard.kit import PlainScope, is_async, scoped_wrapper

_INSIDE: contextvars.ContextVar[str | None] = contextvars.ContextVar("tests_inside", default=None)


class Recording(PlainScope):
    __slots__ = ("log", "token")

    def __init__(self, log: list[Any]) -> None:
        self.log = log
        self.token: Any = None

    def __enter__(self) -> Any:
        self.token = _INSIDE.set("scope")
        self.log.append("enter")
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> Any:
        self.log.append(("exit", exc_type.__name__ if exc_type else None))
        _INSIDE.reset(self.token)  # a ValueError here: entered in another context

    def inside(self, result: Any) -> Any:
        self.log.append(("inside", result, _INSIDE.get()))
        return result * 2

    def after(self, result: Any) -> Any:
        self.log.append(("after", result, _INSIDE.get()))
        return result + 1


def test_a_plain_and_a_coroutine_function_run_in_the_scope_the_same_way() -> None:
    log: list[Any] = []
    wrapper = scoped_wrapper(lambda instance, args, kwargs: Recording(log))

    def plain(x: int) -> int:
        return x

    async def coroutine(x: int) -> int:
        await asyncio.sleep(0)
        return x

    assert wrapt.FunctionWrapper(plain, wrapper)(3) == 7
    plain_log, log[:] = list(log), []
    pending = wrapt.FunctionWrapper(coroutine, wrapper)(3)
    assert log == []  # nothing happens before the coroutine runs: it opens its scope itself
    assert asyncio.run(pending) == 7
    assert (
        log
        == plain_log
        == [
            "enter",
            ("inside", 3, "scope"),
            ("exit", None),
            ("after", 6, None),
        ]
    )


def test_coroutines_made_first_and_awaited_together_each_enter_in_their_task() -> None:
    log: list[Any] = []
    wrapper = scoped_wrapper(lambda instance, args, kwargs: Recording(log))
    wrapped = wrapt.FunctionWrapper(asyncio.sleep, wrapper)

    async def main() -> list[Any]:
        return await asyncio.gather(wrapped(0, 1), wrapped(0, 2))

    assert asyncio.run(main()) == [3, 5]
    assert log.count("enter") == 2 and _INSIDE.get() is None


def test_the_call_raising_still_leaves_the_scope_and_none_runs_untouched() -> None:
    log: list[Any] = []
    wrapper = scoped_wrapper(lambda instance, args, kwargs: Recording(log) if args else None)

    def failing(*args: Any) -> Any:
        raise KeyError("x")

    with pytest.raises(KeyError):
        wrapper(failing, None, (1,), {})
    assert log == ["enter", ("exit", "KeyError")]
    assert wrapper(lambda: "untouched", None, (), {}) == "untouched"


def test_async_is_told_through_bound_methods_partials_and_wrapt_proxies() -> None:
    class Tool:
        async def arun(self) -> None: ...

        def run(self) -> None: ...

    async def body() -> None: ...

    assert is_async(Tool().arun) and not is_async(Tool().run)
    assert is_async(functools.partial(body)) and is_async(
        wrapt.FunctionWrapper(body, scoped_wrapper(lambda *a: None))
    )
    forced = scoped_wrapper(lambda instance, args, kwargs: None, asynchronous=True)
    assert asyncio.run(forced(lambda: asyncio.sleep(0, "x"), None, (), {})) == "x"


def test_a_plain_function_returning_an_awaitable_keeps_its_scope_until_awaited() -> None:
    log: list[Any] = []
    wrapper = scoped_wrapper(lambda instance, args, kwargs: Recording(log))

    async def body(x: int) -> int:
        log.append(("body", _INSIDE.get()))
        return x

    def decorated(x: int) -> Any:  # a sync decorator around an ``async def``
        return body(x)

    async def main() -> int:
        return await wrapt.FunctionWrapper(decorated, wrapper)(3)

    assert asyncio.run(main()) == 7
    assert log == [
        "enter",
        ("body", "scope"),  # the tool ran inside the scope, not after it closed
        ("inside", 3, "scope"),
        ("exit", None),
        ("after", 6, None),
    ]
