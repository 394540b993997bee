"""kit.run_streams (drive, run_over) and kit.streamed_turns (model_turn_stream), each for a
plain generator and an async one."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from otel_loopguard import (
    Action,
    Decision,
    LoopGuardInterrupt,
    RunEndState,
    agent_run,
    current_run,
    get_guard,
)
from otel_loopguard.kit import drive, model_turn_stream, run_over


def _framework(seen: list[Any], items: int = 3, fail: bool = False) -> Iterator[int]:
    for index in range(items):
        seen.append(current_run())
        if fail and index == 1:
            raise ValueError("the framework failed")
        yield index


async def _aframework(seen: list[Any], items: int = 3, fail: bool = False) -> AsyncIterator[int]:
    for index in _framework(seen, items, fail):
        await asyncio.sleep(0)
        yield index


def _consume(stream: Any, stop_after: int | None = None) -> tuple[list[Any], list[Any]]:
    """Items and the run current in the caller's hands, for a plain or an async stream."""

    async def consume_async() -> tuple[list[Any], list[Any]]:
        items, held = [], []
        async for item in stream:
            items.append(item)
            held.append(current_run())
            if stop_after is not None and len(items) == stop_after:
                await stream.aclose()
                break
        return items, held

    if hasattr(stream, "__anext__"):
        return asyncio.run(consume_async())
    items, held = [], []
    for item in stream:
        items.append(item)
        held.append(current_run())
        if stop_after is not None and len(items) == stop_after:
            stream.close()
            break
    return items, held


@pytest.mark.parametrize("framework", [_framework, _aframework])
def test_run_over_keeps_the_run_current_only_while_the_framework_computes(
    make_kit: Any, framework: Any
) -> None:
    kit = make_kit()
    seen: list[Any] = []
    events: list[Any] = []

    def on_event(handle: Any, event: int) -> None:
        events.append((current_run() is handle, event))
        if event == 2:
            handle.set_state(RunEndState.MAX_STEPS)

    run = kit.guard.agent_run(kit.tracer, "planner")
    items, held = _consume(run_over(run, framework(seen), on_event))
    assert items == [0, 1, 2]
    assert held == [None, None, None]
    assert all(handle is seen[0] for handle in seen) and seen[0] is not None
    assert events == [(True, 0), (True, 1), (True, 2)]
    (span,) = kit.spans("invoke_agent planner")
    assert span.attributes["loopguard.run.state"] == "max_steps"


@pytest.mark.parametrize("framework", [_framework, _aframework])
def test_run_over_ends_the_run_once_when_the_caller_stops_or_the_framework_fails(
    make_kit: Any, framework: Any
) -> None:
    kit = make_kit()
    early = kit.guard.agent_run(kit.tracer, "early")
    assert _consume(run_over(early, framework([])), stop_after=1)[0] == [0]
    failing = kit.guard.agent_run(kit.tracer, "failing")
    with pytest.raises(ValueError, match="failed"):
        _consume(run_over(failing, framework([], fail=True)))
    (early_span,) = kit.spans("invoke_agent early")
    (failed_span,) = kit.spans("invoke_agent failing")
    assert early_span.attributes["loopguard.run.state"] == "cancelled"
    assert failed_span.attributes["loopguard.run.state"] == "error"
    assert current_run() is None


class Recorder:
    """A :class:`~otel_loopguard.kit.run_streams.Steps` that records what it is told."""

    def __init__(self, stop_at: int | None = None) -> None:
        self.log: list[Any] = []
        self.stop_at = stop_at

    def enter(self) -> None:
        self.log.append("enter")

    def leave(self) -> None:
        self.log.append("leave")

    def step(self, item: Any) -> None:
        self.log.append(("step", item))
        if item == self.stop_at:
            raise LoopGuardInterrupt(Decision(Action.STOP), "stopped between two items")

    def end(self, outcome: BaseException | None) -> None:
        self.log.append(("end", type(outcome).__name__ if outcome is not None else None))


@pytest.mark.parametrize("framework", [_framework, _aframework])
def test_drive_calls_the_steps_in_order_and_ends_once(framework: Any) -> None:
    recorder = Recorder()
    assert _consume(drive(framework([], items=2), recorder))[0] == [0, 1]
    assert recorder.log == [
        "enter", ("step", 0), "leave",
        "enter", ("step", 1), "leave",
        "enter", "leave",  # the framework is exhausted
        "enter", ("end", None), "leave",  # closed and ended, entered
    ]  # fmt: skip
    stopping = Recorder(stop_at=1)
    with pytest.raises(LoopGuardInterrupt):
        _consume(drive(framework([]), stopping))
    assert stopping.log[-3:] == ["enter", ("end", "LoopGuardInterrupt"), "leave"]
    assert stopping.log.count(("step", 2)) == 0


# -- model_turn_stream ---------------------------------------------------------------------


def _chunks(below: bool, pulled: list[int]) -> Iterator[str]:
    for index in range(3):
        pulled.append(index)
        if below and index == 2:  # a model SDK's instrumentation reports at the last chunk
            get_guard().observe_llm_response(model="sdk", output_tokens=5)
        yield f"chunk {index}"


async def _achunks(below: bool, pulled: list[int]) -> AsyncIterator[str]:
    for chunk in _chunks(below, pulled):
        await asyncio.sleep(0)
        yield chunk


def _steps() -> int:
    handle = current_run()
    assert handle is not None
    return get_guard().monitor.run_snapshot(handle.run_id).counters.steps


@pytest.mark.parametrize("chunks", [_chunks, _achunks])
@pytest.mark.parametrize("below", [False, True])
def test_a_streamed_turn_counts_once_and_the_caller_between_chunks_has_no_turn_open(
    make_kit: Any, chunks: Any, below: bool
) -> None:
    kit = make_kit()
    added: list[str] = []
    reads: list[int] = []

    def read() -> dict[str, Any]:
        reads.append(len(added))
        return {"model": "framework", "output_tokens": 7}

    with agent_run("writer", tracer=kit.tracer):
        stream = model_turn_stream(chunks(below, []), read, package="tests", add=added.append)
        items, _ = _consume(stream)
        assert items == added == ["chunk 0", "chunk 1", "chunk 2"]
        assert _steps() == 1
    assert reads == ([] if below else [3])


@pytest.mark.parametrize("chunks", [_chunks, _achunks])
def test_a_vetoed_stream_never_pulls_and_an_abandoned_one_reports_nothing(
    make_kit: Any, chunks: Any
) -> None:
    kit = make_kit(mode="enforce", max_steps=1)
    pulled: list[int] = []
    read_calls: list[str] = []

    def read() -> dict[str, Any]:
        read_calls.append("read")
        return {"output_tokens": 1}

    with agent_run("writer", tracer=kit.tracer):
        assert _consume(model_turn_stream(chunks(False, pulled), read, package="t"))[0]
        vetoed = model_turn_stream(chunks(False, pulled), read, package="t")
        with pytest.raises(LoopGuardInterrupt):  # max_steps reached: vetoed before a pull
            _consume(vetoed)
    assert pulled == [0, 1, 2] and read_calls == ["read"]
    kit = make_kit()
    with agent_run("writer", tracer=kit.tracer):
        assert _consume(model_turn_stream(chunks(False, []), read, package="t"), stop_after=1)
        assert _steps() == 0  # the caller broke out: no turn the agent acts on
    assert read_calls == ["read"]


def test_outside_a_run_the_chunks_pass_untouched(make_kit: Any) -> None:
    make_kit(mode="enforce", max_steps=1)

    def read() -> dict[str, Any]:
        raise AssertionError("nothing to report outside a run")

    for _ in range(3):
        stream = model_turn_stream(
            _chunks(False, []), read, package="t", applies=lambda: current_run() is not None
        )
        assert _consume(stream)[0] == ["chunk 0", "chunk 1", "chunk 2"]
