"""A proxy around LiteLLM's ``CustomStreamWrapper`` that ends the call's span exactly once.

``litellm.completion(stream=True)`` and ``acompletion(stream=True)`` return a
``CustomStreamWrapper`` (LiteLLM 1.110) that the caller may exhaust, break out of,
close (``close`` / ``aclose``), use as a (async) context manager, or drop half-read.
Every one of those endings funnels into :meth:`_StreamEnd.finish`, which runs once: a
complete stream is judged (and may raise STOP from the caller's loop, in place of the end
of the stream), an unfinished one ends its span without a judgement (its answer is not
known), a dropped one does so when it is garbage-collected.

The proxy is a ``wrapt.ObjectProxy``, so ``isinstance(stream, CustomStreamWrapper)`` and
every other attribute (``stream_chunk_builder`` inputs, ``response_uses_responses_api``,
...) still work for the frameworks that inspect it.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Any

import wrapt

from otel_loopguard_litellm.answers import Answer, StreamFolder

logger = logging.getLogger(__name__)

# on_done(answer, error, complete): complete is False when the caller stopped early or the
# stream failed; it may raise LoopGuardInterrupt (only when complete)
DoneCallback = Callable[[Answer | None, BaseException | None, bool], None]


class _StreamEnd:
    """Per-stream state: the folded chunks and the once-only end."""

    __slots__ = ("_done", "_lock", "folder", "on_done")

    def __init__(self, on_done: DoneCallback) -> None:
        self.folder = StreamFolder()
        self.on_done = on_done
        self._done = False
        self._lock = threading.Lock()

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
        self.on_done(answer, error, complete)


class ObservedStream(wrapt.ObjectProxy):  # type: ignore[misc]
    """A ``CustomStreamWrapper`` that reports its chunks and its end (sync and async use)."""

    def __init__(self, stream: Any, on_done: DoneCallback) -> None:
        super().__init__(stream)
        self._self_end = _StreamEnd(on_done)

    # -- sync -----------------------------------------------------------------------------
    def __iter__(self) -> ObservedStream:
        return self

    def __next__(self) -> Any:
        try:
            chunk = next(self.__wrapped__)
        except StopIteration:
            self._self_end.finish()
            raise
        except BaseException as exc:
            self._self_end.finish(error=exc, complete=False)
            raise
        self._self_end.add(chunk)
        return chunk

    def __enter__(self) -> ObservedStream:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.__wrapped__.close()
        finally:
            self._self_end.finish(complete=False)

    # -- async ----------------------------------------------------------------------------
    def __aiter__(self) -> ObservedStream:
        return self

    async def __anext__(self) -> Any:
        try:
            chunk = await self.__wrapped__.__anext__()
        except StopAsyncIteration:
            self._self_end.finish()
            raise
        except BaseException as exc:
            self._self_end.finish(error=exc, complete=False)
            raise
        self._self_end.add(chunk)
        return chunk

    async def __aenter__(self) -> ObservedStream:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        try:
            await self.__wrapped__.aclose()
        finally:
            self._self_end.finish(complete=False)
