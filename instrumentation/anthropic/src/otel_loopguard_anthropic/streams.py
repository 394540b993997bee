"""Streamed responses: watch the events as the application reads them.

The proxies stand in for the SDK's ``Stream`` / ``AsyncStream`` (``messages.stream``'s
``MessageStream`` reads through them too). At ``message_stop`` the turn is complete and is
fed: at STOP in ``enforce`` mode the stream is closed and ``LoopGuardInterrupt`` raised
instead of handing out the last event, so the application does not act on that turn. Our
span ends exactly once: at ``message_stop``, on an error, on ``close()``, or when a stream
dropped without closing is collected.
"""

from __future__ import annotations

import contextlib
import weakref
from typing import TYPE_CHECKING, Any

import wrapt

from otel_loopguard import LoopGuardInterrupt
from otel_loopguard.kit.run_streams import async_items, sync_items
from otel_loopguard_anthropic.messages import StreamedTurn

if TYPE_CHECKING:  # pragma: no cover
    from otel_loopguard_anthropic.model_turns import ModelCall


class _Watch:
    """Per-stream state, shared by the proxy and its finalizer (which must not hold the proxy)."""

    __slots__ = ("__weakref__", "call", "turn")

    def __init__(self, call: ModelCall) -> None:
        self.call = call
        self.turn = StreamedTurn()

    def event(self, event: Any) -> bool:
        """Feed one event; True when the message is complete and was fed (raises only
        ``LoopGuardInterrupt``, at STOP in ``enforce`` mode)."""
        try:
            complete = self.turn.add(event)
        except Exception as exc:  # an event we cannot read: the stream goes on unwatched
            self.call.guard.telemetry.internal_error("anthropic.stream_event", exc)
            return False
        if complete:
            self.call.finish(self.turn.turn)
        return complete

    def pull_failed(self, error: BaseException) -> None:
        """The SDK stream's ``__next__`` / ``__anext__`` raised: its end, or its failure."""
        self.ended(None if isinstance(error, (StopIteration, StopAsyncIteration)) else error)

    def stop(self, event: Any) -> LoopGuardInterrupt | None:
        """Feed ``event``; the interrupt to raise instead of handing it out (the caller
        closes the SDK stream first, then raises it), else None."""
        try:
            self.event(event)
        except LoopGuardInterrupt as interrupt:
            return interrupt
        return None

    def ended(self, error: BaseException | None) -> None:
        """The stream ended: read to the end, failed, closed or collected. The SDK's span
        (if any) has ended with its body by now; our span ends here unless the message was
        complete (then it ended at ``message_stop``)."""
        self.call.fail(error if error is not None else GeneratorExit())
        self.call.release()


def _finalizer(proxy: Any, watch: _Watch) -> None:
    with contextlib.suppress(TypeError):  # not weak-referenceable: close() and errors still end it
        weakref.finalize(proxy, watch.ended, None)


class _WatchedStream(wrapt.ObjectProxy):  # type: ignore[misc]
    """The proxy's state: what the sync and the async stream share (their own code is only
    how they read, close and enter: ``next`` / ``await anext`` cannot be one function)."""

    def __init__(self, stream: Any, call: ModelCall) -> None:
        super().__init__(stream)
        self._self_watch = _Watch(call)
        # the iterator read, taken at the first read: the stream may be another
        # instrumentation's iterable proxy (``__iter__`` / ``__aiter__`` only)
        self._self_items: Any = None
        _finalizer(self, self._self_watch)


class ObservedStream(_WatchedStream):
    def __iter__(self) -> ObservedStream:
        return self

    def __next__(self) -> Any:
        watch = self._self_watch
        try:
            items = self._self_items
            if items is None:
                items = self._self_items = sync_items(self.__wrapped__)
            item = items.__next__()
        except BaseException as exc:
            watch.pull_failed(exc)
            raise
        interrupt = watch.stop(item)
        if interrupt is not None:
            with contextlib.suppress(Exception):
                self.__wrapped__.close()
            watch.ended(None)
            raise interrupt
        return item

    def close(self) -> None:
        try:
            self.__wrapped__.close()
        finally:
            self._self_watch.ended(None)

    def __enter__(self) -> ObservedStream:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncObservedStream(_WatchedStream):
    def __aiter__(self) -> AsyncObservedStream:
        return self

    async def __anext__(self) -> Any:
        watch = self._self_watch
        try:
            items = self._self_items
            if items is None:
                items = self._self_items = async_items(self.__wrapped__)
            item = await items.__anext__()
        except BaseException as exc:
            watch.pull_failed(exc)
            raise
        interrupt = watch.stop(item)
        if interrupt is not None:
            with contextlib.suppress(Exception):
                await self.__wrapped__.close()
            watch.ended(None)
            raise interrupt
        return item

    async def close(self) -> None:
        try:
            await self.__wrapped__.close()
        finally:
            self._self_watch.ended(None)

    async def __aenter__(self) -> AsyncObservedStream:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
