"""events_in_run: a run around a framework's async generator of events (Google ADK, Strands)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Iterator
from typing import Any

import pytest
import wrapt

from otel_loopguard import current_run
from otel_loopguard.kit.run_streams import events_in_run, run_over


async def _framework(seen: list[object], fail_at: int | None = None) -> AsyncGenerator[int, None]:
    """A framework's invocation: three events, a task started in the first step, records the
    run current in each step (and in the task)."""
    task: asyncio.Task[object] | None = None
    for index in range(3):
        seen.append(current_run())
        if task is None:
            task = asyncio.get_running_loop().create_task(asyncio.sleep(0, current_run()))
        if fail_at == index:
            raise ValueError("the framework failed")
        yield index
    seen.append(await task)


def test_the_run_is_current_while_the_framework_computes_and_not_in_the_callers_hands(
    stack: Any,
) -> None:
    async def main() -> tuple[list[object], list[object], object]:
        seen: list[object] = []
        held: list[object] = []
        run = stack.guard.agent_run(stack.tracer, "planner")
        async for _event in events_in_run(run, _framework(seen)):
            held.append(current_run())
        return seen, held, current_run()

    seen, held, after = asyncio.run(main())
    assert len(seen) == 4 and seen[0] is not None
    assert all(handle is seen[0] for handle in seen)  # every step and the task: one run
    assert held == [None, None, None]  # between events the caller's context has no run
    assert after is None
    (agent,) = stack.spans("invoke_agent planner")
    assert agent.attributes["loopguard.run.state"] == "completed"


def test_a_caller_that_stops_early_ends_the_run_once_as_cancelled(stack: Any) -> None:
    async def main() -> object:
        run = stack.guard.agent_run(stack.tracer, "planner")
        events = events_in_run(run, _framework([]))
        async for _event in events:
            break
        await events.aclose()
        # the next invocation is a run of its own, not nested in the abandoned one
        nested = stack.guard.agent_run(stack.tracer, "next")
        async for _event in events_in_run(nested, _framework([])):
            pass
        return current_run()

    assert asyncio.run(main()) is None
    (abandoned,) = stack.spans("invoke_agent planner")
    assert abandoned.attributes["loopguard.run.state"] == "cancelled"
    (following,) = stack.spans("invoke_agent next")
    assert following.parent is None or following.parent.span_id != abandoned.context.span_id


def test_a_failing_framework_ends_the_run_with_its_error_and_the_error_reaches_the_caller(
    stack: Any,
) -> None:
    async def main() -> None:
        run = stack.guard.agent_run(stack.tracer, "planner")
        async for _event in events_in_run(run, _framework([], fail_at=1)):
            pass

    with pytest.raises(ValueError, match="the framework failed"):
        asyncio.run(main())
    (agent,) = stack.spans("invoke_agent planner")
    assert agent.attributes["loopguard.run.state"] == "error"


# -- iterable proxies: another instrumentation's wrapper around the framework's stream ---------


class _TheirAsyncProxy(wrapt.ObjectProxy):  # type: ignore[misc]
    """As OpenInference wraps ``Runner.run_async``: a ``wrapt`` proxy of the generator whose
    ``__aiter__`` is an async generator (their span around the loop) and which has no
    ``__anext__`` of its own (``proxy.__anext__`` would reach the generator it wraps)."""

    def __init__(self, wrapped: Any, tracer: Any) -> None:
        super().__init__(wrapped)
        self._self_tracer = tracer

    async def __aiter__(self) -> Any:
        with self._self_tracer.start_as_current_span("their run_async"):
            async for event in self.__wrapped__:
                yield event


class _TheirSyncProxy(wrapt.ObjectProxy):  # type: ignore[misc]
    """The same for a plain generator: ``__iter__`` only, no ``__next__``."""

    def __init__(self, wrapped: Any, tracer: Any) -> None:
        super().__init__(wrapped)
        self._self_tracer = tracer

    def __iter__(self) -> Any:
        with self._self_tracer.start_as_current_span("their run"):
            yield from self.__wrapped__


def _plain(closed: list[str]) -> Iterator[int]:
    try:
        yield from range(3)
    finally:
        closed.append("framework")


async def _async_plain(closed: list[str]) -> AsyncGenerator[int, None]:
    try:
        for index in range(3):
            yield index
    finally:
        closed.append("framework")


def test_an_async_iterable_proxy_is_driven_through_its_own_aiter(stack: Any) -> None:
    assert not hasattr(type(_TheirAsyncProxy(_framework([]), None)), "__anext__")

    async def main() -> tuple[list[int], list[object]]:
        seen: list[object] = []
        run = stack.guard.agent_run(stack.tracer, "planner")
        proxy = _TheirAsyncProxy(_framework(seen), stack.tracer)
        return [event async for event in events_in_run(run, proxy)], seen

    events, seen = asyncio.run(main())
    assert events == [0, 1, 2]
    assert seen[0] is not None and all(handle is seen[0] for handle in seen)
    (agent,) = stack.spans("invoke_agent planner")
    assert agent.attributes["loopguard.run.state"] == "completed"
    (theirs,) = stack.spans("their run_async")  # their wrapper ran, inside our run
    assert theirs.parent is not None and theirs.parent.span_id == agent.context.span_id


def test_a_caller_that_stops_early_closes_the_proxys_generator_and_the_framework(
    stack: Any,
) -> None:
    closed: list[str] = []

    async def main() -> None:
        run = stack.guard.agent_run(stack.tracer, "planner")
        events = events_in_run(run, _TheirAsyncProxy(_async_plain(closed), stack.tracer))
        async for _event in events:
            break
        await events.aclose()

    asyncio.run(main())
    assert closed == ["framework"]
    (agent,) = stack.spans("invoke_agent planner")
    assert agent.attributes["loopguard.run.state"] == "cancelled"
    assert len(stack.spans("their run_async")) == 1  # their span ended too


def test_a_sync_iterable_proxy_is_driven_through_its_own_iter(stack: Any) -> None:
    closed: list[str] = []
    assert not hasattr(type(_TheirSyncProxy(_plain([]), None)), "__next__")
    run = stack.guard.agent_run(stack.tracer, "planner")
    assert list(run_over(run, _TheirSyncProxy(_plain(closed), stack.tracer))) == [0, 1, 2]
    assert closed == ["framework"]
    (agent,) = stack.spans("invoke_agent planner")
    assert agent.attributes["loopguard.run.state"] == "completed"
    (theirs,) = stack.spans("their run")
    assert theirs.parent is not None and theirs.parent.span_id == agent.context.span_id


def test_a_sync_iterable_proxy_stopped_early_closes_the_framework(stack: Any) -> None:
    closed: list[str] = []
    run = stack.guard.agent_run(stack.tracer, "planner")
    events = run_over(run, _TheirSyncProxy(_plain(closed), stack.tracer))
    assert next(events) == 0
    events.close()
    assert closed == ["framework"]
    (agent,) = stack.spans("invoke_agent planner")
    assert agent.attributes["loopguard.run.state"] == "cancelled"


def test_a_proxy_that_only_forwards_attributes_is_read_as_the_stream_it_wraps(stack: Any) -> None:
    async def main() -> list[int]:
        run = stack.guard.agent_run(stack.tracer, "planner")
        return [event async for event in events_in_run(run, wrapt.ObjectProxy(_framework([])))]

    assert asyncio.run(main()) == [0, 1, 2]
    (agent,) = stack.spans("invoke_agent planner")
    assert agent.attributes["loopguard.run.state"] == "completed"
