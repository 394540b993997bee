"""A run around an async generator of a framework's events, for framework wrappers.

Many agent frameworks run an invocation as an async generator the caller iterates
(``Runner.run_async`` in Google ADK, ``Agent.stream_async`` in Strands, ...). The run must
cover the framework's work, but only while the framework computes its next event, never
while the caller holds one: between two events the caller's context must not keep the run
current, or a caller that drops the generator halfway would make its next invocation look
nested in this one (and a nested run joins the enclosing one). Tasks the framework starts
during a step copy the context, so they inherit the run.

The run's ``invoke_agent`` span ends exactly once with the outcome: the end of the events,
the exception that escaped them (``LoopGuardInterrupt`` included), or the caller closing the
generator early (``GeneratorExit``, a cancelled run). Closing the framework's generator,
which may still do work that belongs to the run, happens with the run current.

:func:`events_in_run` is the plain async case. :func:`run_over` is the same for a plain
generator too, with a per-event hook (the end state an event reports); :func:`drive` is the
loop under it, for wrappers whose framework needs more per step (a context variable of its
own, a run opened at the first step, a check between events): they write a :class:`Steps`.

The framework's stream may be only *iterable*: another instrumentation applied before ours
(OpenInference's ``Runner.run_async``) hands back a ``wrapt`` proxy whose ``__aiter__`` is an
async generator and which has no ``__anext__``. So the stream is read through ``aiter()`` /
``iter()`` of it, taken at the first step (their ``__aiter__`` may start work of its own), and
both the iterator and the stream are closed at the end (:func:`is_async_stream` says which
kind a stream is).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator
from typing import Any, Protocol, TypeVar

from otel_loopguard.engine.interrupt import LoopGuardInterrupt

Item = TypeVar("Item")


def events_in_run(run: Any, events: AsyncGenerator[Item, None]) -> AsyncGenerator[Item, None]:
    """Yield ``events`` with ``run`` (an unentered :meth:`LoopGuard.agent_run`) current only
    while the next event is computed; see the module docstring."""
    return drive(events, _RunSteps(run, None))  # type: ignore[no-any-return]


# -- any stream, plain or async, with a per-step hook ------------------------------------------


class Steps(Protocol):
    """What :func:`drive` does around each step of a framework's stream.

    ``enter`` / ``leave`` around each step (the framework computing its next item) and
    around the close at the end, never while the caller holds an item; ``step(item)``
    with each item, still entered (it may raise: a check between items); ``end(outcome)``
    exactly once, entered, after the framework's generator was closed: ``None`` when the
    stream was exhausted, else the exception that ended it (the framework's, ours, the
    caller's ``GeneratorExit``).
    """

    def enter(self) -> None: ...

    def leave(self) -> None: ...

    def step(self, item: Any) -> None: ...

    def end(self, outcome: BaseException | None) -> None: ...


def drive(inner: Any, steps: Steps, *, quiet_close: bool = False) -> Any:
    """Yield the items of ``inner`` (a generator or an async generator; the result is of the
    same kind) with ``steps`` around each step; see :class:`Steps`. With ``quiet_close`` an
    error of the framework's generator while it is closed is dropped (the outcome that
    ended the stream goes on)."""
    if is_async_stream(inner):
        return _drive_async(inner, steps, quiet_close)
    return _drive(inner, steps, quiet_close)


def is_async_stream(stream: Any) -> bool:
    """Whether ``stream`` is read with ``async for``: an async iterator, or an async iterable
    only (a ``wrapt`` proxy with ``__aiter__`` and no ``__anext__``). Asked before any sync
    test: every ``wrapt.ObjectProxy`` has ``__iter__``, an async one too."""
    return hasattr(stream, "__anext__") or hasattr(stream, "__aiter__")


def async_items(stream: Any) -> Any:
    """The async iterator to read ``stream`` with: the stream itself when its type is one
    (``__anext__``), else what its ``__aiter__`` gives (an iterable proxy's own generator, so
    their instrumentation runs; ``stream.__anext__`` would reach past it to the generator it
    wraps). Close with :func:`aclose_stream`."""
    kind = type(stream)
    if hasattr(kind, "__anext__"):
        return stream
    if hasattr(kind, "__aiter__"):
        return aiter(stream)
    return stream.__aiter__()  # a proxy that only forwards attributes


def sync_items(stream: Any) -> Any:
    """:func:`async_items` of a plain stream (close with :func:`close_stream`)."""
    return stream if hasattr(type(stream), "__next__") else iter(stream)


def run_over(run: Any, events: Any, on_event: Callable[[Any, Any], None] | None = None) -> Any:
    """:func:`events_in_run` for a plain generator or an async one, with a per-event hook:
    ``on_event(handle, event)`` runs with the run current, before the caller gets the event
    (``handle`` is the run's ``RunHandle``; it may set the end state the event reports)."""
    return drive(events, _RunSteps(run, on_event))


class _RunSteps:
    """The run current only while the framework computes (see the module docstring)."""

    __slots__ = ("_entered", "_on_event", "_run")

    def __init__(self, run: Any, on_event: Callable[[Any, Any], None] | None) -> None:
        self._run = run
        self._on_event = on_event
        self._entered = False

    def enter(self) -> None:
        if self._entered:
            self._run.resume()
        else:
            self._entered = True
            self._run.__enter__()

    def leave(self) -> None:
        self._run.suspend()

    def step(self, item: Any) -> None:
        if self._on_event is not None:
            self._on_event(self._run.handle, item)

    def end(self, outcome: BaseException | None) -> None:
        if outcome is None:
            self._run.__exit__(None, None, None)
        else:
            self._run.__exit__(type(outcome), outcome, outcome.__traceback__)


_DONE: Any = object()


class _Entered:
    """``with`` around one step (``enter`` / ``leave``), or around the close at the end
    (``ending``: then ``end(outcome)`` before ``leave``; with ``quiet`` an error of the
    close is dropped)."""

    __slots__ = ("_ending", "_outcome", "_quiet", "_steps")

    def __init__(
        self,
        steps: Steps,
        ending: bool = False,
        outcome: BaseException | None = None,
        quiet: bool = False,
    ) -> None:
        self._steps = steps
        self._ending = ending
        self._outcome = outcome
        self._quiet = quiet

    def __enter__(self) -> None:
        self._steps.enter()

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        try:
            if self._ending:
                self._steps.end(self._outcome)
        finally:
            self._steps.leave()
        return self._quiet and isinstance(exc, (Exception, LoopGuardInterrupt))


def _drive(inner: Any, steps: Steps, quiet_close: bool) -> Iterator[Any]:
    outcome: BaseException | None = None
    items: Any = None
    try:
        while True:
            with _Entered(steps):
                if items is None:
                    items = sync_items(inner)
                item = next(items, _DONE)
                if item is not _DONE:
                    steps.step(item)
            if item is _DONE:
                return
            yield item
    except BaseException as exc:
        outcome = exc
        raise
    finally:
        with _Entered(steps, True, outcome, quiet_close):
            close_stream(items, inner)


async def _drive_async(inner: Any, steps: Steps, quiet_close: bool) -> AsyncIterator[Any]:
    outcome: BaseException | None = None
    items: Any = None
    try:
        while True:
            with _Entered(steps):
                if items is None:
                    items = async_items(inner)
                item = await anext(items, _DONE)
                if item is not _DONE:
                    steps.step(item)
            if item is _DONE:
                return
            yield item
    except BaseException as exc:
        outcome = exc
        raise
    finally:
        with _Entered(steps, True, outcome, quiet_close):
            await aclose_stream(items, inner)


def close_stream(items: Any, inner: Any) -> None:
    """Close the iterator read (``items``, from :func:`sync_items`; ``None`` when none was
    taken), then the stream ``inner`` when that is another object (a generator an iterable
    proxy's loop left suspended)."""
    try:
        if items is not None:
            getattr(items, "close", _no_close)()
    finally:
        if items is not inner:
            getattr(inner, "close", _no_close)()


async def aclose_stream(items: Any, inner: Any) -> None:
    """:func:`close_stream` of an async stream."""
    try:
        if items is not None:
            await getattr(items, "aclose", _no_aclose)()
    finally:
        if items is not inner:
            await getattr(inner, "aclose", _no_aclose)()


def _no_close() -> None:
    return None


async def _no_aclose() -> None:
    return None
