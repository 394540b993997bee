"""events_in_run: a run around a framework's async generator of events (Google ADK, Strands)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import pytest

from otel_loopguard import current_run
from otel_loopguard.kit.run_streams import events_in_run


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
