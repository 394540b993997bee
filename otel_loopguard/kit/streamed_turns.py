"""A model turn the caller streams: checked at the first pull, one turn per pull, one report.

A framework's model answer read chunk by chunk (LangChain's ``BaseChatModel.stream``, Agno's
``process_response_stream``) is one model turn, but the turn may only be open while the
framework computes the next chunk, never while the caller holds one: between chunks the
caller's code runs, and a turn left open there would take the report of any model call the
caller makes meanwhile for this turn's. So each pull runs in a model turn of its own and
the stream remembers whether a layer below reported any of them.

:func:`model_turn_stream` wraps the framework's generator (plain or async; the result is of
the same kind):

- at the first chunk asked for (a stream does nothing before): ``applies()`` (False: the
  chunks pass untouched), ``first()``, then the pre-flight check (``preflight_llm``), so in
  ``enforce`` mode a vetoed call raises before the provider is called;
- each chunk is handed to ``add(chunk)`` before the caller gets it;
- when the stream is exhausted, in a run, and no layer below reported the turn: one
  ``llm_response`` from ``read()`` (:func:`~otel_loopguard.kit.model_turn.report_turn`: a
  failing ``read`` is counted as ``<package>.model_turn``); a STOP raises from the stream at
  its end, after the caller has every chunk and before it runs the tools they ask for;
- a stream left early (``break``, ``close()``, an error) reports nothing; the framework's
  generator is closed inside a turn of its own, so a layer below that reports on close
  marks that turn rather than one of the caller's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any

from otel_loopguard.guard.global_guard import get_guard
from otel_loopguard.kit.model_turn import report_turn

Read = Callable[[], "Mapping[str, Any] | None"]


def model_turn_stream(
    chunks: Any,
    read: Read,
    *,
    package: str,
    add: Callable[[Any], None] | None = None,
    applies: Callable[[], bool] | None = None,
    first: Callable[[], None] | None = None,
) -> Any:
    """``chunks`` (a generator or an async generator) observed as one model turn; see the
    module docstring."""
    if hasattr(chunks, "__anext__"):
        return _turn_over_async(chunks, read, package, add, applies, first)
    return _turn_over(chunks, read, package, add, applies, first)


def _turn_over(
    chunks: Any,
    read: Read,
    package: str,
    add: Callable[[Any], None] | None,
    applies: Callable[[], bool] | None,
    first: Callable[[], None] | None,
) -> Iterator[Any]:
    if applies is not None and not applies():  # e.g. made in a run, read after it
        yield from chunks
        return
    guard = get_guard()
    state = _Pulls()
    try:
        if first is not None:
            first()
        guard.preflight_llm()  # raises nothing but LoopGuardInterrupt (enforce, STOP)
        while True:
            with state.pull(guard):
                chunk = next(chunks, _DONE)
            if chunk is _DONE:
                state.finished = True
                break
            if add is not None:
                add(chunk)
            yield chunk
    finally:
        if not state.finished:  # abandoned, failed or vetoed: closed inside a turn
            with guard.model_turn():
                chunks.close()
    if state.needs_report:
        report_turn(guard, package, read)


async def _turn_over_async(
    chunks: Any,
    read: Read,
    package: str,
    add: Callable[[Any], None] | None,
    applies: Callable[[], bool] | None,
    first: Callable[[], None] | None,
) -> AsyncIterator[Any]:
    if applies is not None and not applies():
        async for chunk in chunks:
            yield chunk
        return
    guard = get_guard()
    state = _Pulls()
    try:
        if first is not None:
            first()
        guard.preflight_llm()
        while True:
            with state.pull(guard):
                chunk = await anext(chunks, _DONE)
            if chunk is _DONE:
                state.finished = True
                break
            if add is not None:
                add(chunk)
            yield chunk
    finally:
        if not state.finished:
            with guard.model_turn():
                await chunks.aclose()
    if state.needs_report:
        report_turn(guard, package, read)


_DONE: Any = object()


class _Pulls:
    """What the pulls of one stream learnt: in a run, reported below, read to its end."""

    __slots__ = ("_turn", "finished", "in_run", "reported")

    def __init__(self) -> None:
        self.in_run = False
        self.reported = False
        self.finished = False
        self._turn: Any = None

    def pull(self, guard: Any) -> _Pulls:
        self._turn = guard.model_turn()  # never raises
        return self

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc_info: Any) -> None:
        turn, self._turn = self._turn, None
        turn.end()
        self.in_run = self.in_run or turn.in_run
        self.reported = self.reported or turn.reported

    @property
    def needs_report(self) -> bool:
        return self.in_run and not self.reported
