"""A proxy around LiteLLM's streams that ends the call's span exactly once.

``litellm.completion(stream=True)`` and ``acompletion(stream=True)`` return a
``CustomStreamWrapper`` (LiteLLM 1.110), ``litellm.responses(stream=True)`` a Responses
streaming iterator; the caller may exhaust either, break out of,
close (``close`` / ``aclose``), use as a (async) context manager, or drop half-read.
Every one of those endings funnels into :meth:`_StreamEnd.finish`, which runs once: a
complete stream is judged (and may raise STOP from the caller's loop, in place of the end
of the stream), an unfinished one ends its span without a judgement (its answer is not
known), a dropped one does so when it is garbage-collected.

The proxy is a ``wrapt.ObjectProxy``, so ``isinstance(stream, CustomStreamWrapper)`` and
every other attribute (``stream_chunk_builder`` inputs, ``response_uses_responses_api``,
...) still work for the frameworks that inspect it.

A layer below may report the same answer while the stream is read (our OpenAI package
under ``azure/...``: its own stream ends inside one of LiteLLM's chunk reads). Each read
of a chunk runs in a model turn of its own (``open_turn``, the guard's ``model_turn``), not
the caller's code between chunks; if any was reported from below, the end of the stream is
not reported again.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

import wrapt

from otel_loopguard_litellm.answers import Answer

logger = logging.getLogger(__name__)

# on_done(answer, error, complete, reported_below): complete is False when the caller
# stopped early or the stream failed; reported_below when a layer below reported the
# answer while a chunk was read; it may raise LoopGuardInterrupt (only when complete)
DoneCallback = Callable[[Answer | None, BaseException | None, bool, bool], None]


class Folder(Protocol):
    """Folds a stream's chunks (or events) into the :class:`Answer`, O(1) per chunk."""

    def add(self, chunk: Any) -> None: ...

    def finish(self) -> Answer: ...


class _StreamEnd:
    """Per-stream state: the folded chunks and the once-only end."""

    __slots__ = ("_done", "_lock", "folder", "on_done", "open_turn", "reported_below")

    def __init__(
        self, folder: Folder, on_done: DoneCallback, open_turn: Callable[[], Any] | None
    ) -> None:
        self.folder = folder
        self.on_done = on_done
        self.open_turn = open_turn
        self.reported_below = False
        self._done = False
        self._lock = threading.Lock()

    def enter_turn(self) -> Any:
        """A model turn around one chunk read (``None`` if it cannot be opened)."""
        if self.open_turn is None:
            return None
        try:
            return self.open_turn()
        except Exception:
            logger.debug("otel-loopguard: could not open a model turn", exc_info=True)
            return None

    def leave_turn(self, turn: Any) -> None:
        if turn is None:
            return
        try:
            turn.end()
            if turn.reported:
                self.reported_below = True
        except Exception:
            logger.debug("otel-loopguard: could not close a model turn", exc_info=True)

    def add(self, chunk: Any) -> None:
        try:
            self.folder.add(chunk)
        except Exception:  # an unexpected chunk shape must not break the caller's stream
            logger.debug("otel-loopguard: could not read a LiteLLM stream chunk", exc_info=True)

    def __del__(self) -> None:
        # dropped half-read, neither exhausted nor closed: end the span once; nothing may
        # escape a finalizer
        with contextlib.suppress(Exception):
            self.finish(complete=False)

    def finish(self, error: BaseException | None = None, complete: bool = True) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
        answer: Answer | None
        try:
            answer = self.folder.finish()
        except Exception:
            logger.debug("otel-loopguard: could not fold a LiteLLM stream", exc_info=True)
            answer = None
        self.on_done(answer, error, complete, self.reported_below)


class ObservedStream(wrapt.ObjectProxy):  # type: ignore[misc]
    """A ``CustomStreamWrapper`` that reports its chunks and its end (sync and async use)."""

    def __init__(
        self,
        stream: Any,
        folder: Folder,
        on_done: DoneCallback,
        open_turn: Callable[[], Any] | None = None,
    ) -> None:
        super().__init__(stream)
        self._self_end = _StreamEnd(folder, on_done, open_turn)

    # -- sync -----------------------------------------------------------------------------
    def __iter__(self) -> ObservedStream:
        return self

    def __next__(self) -> Any:
        end = self._self_end
        turn = end.enter_turn()
        try:
            chunk = next(self.__wrapped__)
        except StopIteration:
            end.leave_turn(turn)
            end.finish()
            raise
        except BaseException as exc:
            end.leave_turn(turn)
            end.finish(error=exc, complete=False)
            raise
        end.leave_turn(turn)
        end.add(chunk)
        return chunk

    def __enter__(self) -> ObservedStream:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def close(self) -> None:
        try:
            close = getattr(self.__wrapped__, "close", None)
            if close is not None:
                close()
        finally:
            self._self_end.finish(complete=False)

    # -- async ----------------------------------------------------------------------------
    def __aiter__(self) -> ObservedStream:
        return self

    async def __anext__(self) -> Any:
        end = self._self_end
        turn = end.enter_turn()
        try:
            chunk = await self.__wrapped__.__anext__()
        except StopAsyncIteration:
            end.leave_turn(turn)
            end.finish()
            raise
        except BaseException as exc:
            end.leave_turn(turn)
            end.finish(error=exc, complete=False)
            raise
        end.leave_turn(turn)
        end.add(chunk)
        return chunk

    async def __aenter__(self) -> ObservedStream:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        try:
            aclose = getattr(self.__wrapped__, "aclose", None)
            if aclose is not None:
                await aclose()
        finally:
            self._self_end.finish(complete=False)
