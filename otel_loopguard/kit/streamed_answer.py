"""The end of a streamed model answer, reported exactly once however the stream ends.

A streamed answer (the OpenAI SDK's ``Stream``, LiteLLM's ``CustomStreamWrapper``, ...)
may be exhausted, broken out of, closed, used as a context manager, handed to an SDK helper
that closes only its HTTP response, or dropped half-read. The stream proxies of the model
SDK packages funnel every one of those endings into :meth:`StreamedAnswer.finish`, which
hands the folded answer on once: a complete stream to be judged, an unfinished one only to
end its span (its answer is not known), a dropped one when it is garbage-collected.

Kept apart from the proxies, which differ per SDK (its close methods, its response
object), so the once-only end and the folding of chunks are written once.

A layer below the instrumented call may report the same answer while the stream is read
(our OpenAI package under LiteLLM's ``azure/...`` route: the SDK stream ends inside one of
LiteLLM's chunk reads). With ``open_turn`` (the guard's ``model_turn``), each read of a
chunk runs in a model turn of its own, not the caller's code between chunks; if any of
them was reported from below, ``reported_below`` tells the end of the stream not to
report the answer again.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

from otel_loopguard.kit.openai_format import ModelAnswer

logger = logging.getLogger(__name__)

# on_done(answer, error, complete, reported_below): answer is None when nothing could be
# read; complete is False when the caller stopped early or the stream failed;
# reported_below when a layer below reported the answer while a chunk was read. It may
# raise LoopGuardInterrupt (only when complete).
DoneCallback = Callable[[ModelAnswer | None, BaseException | None, bool, bool], None]


class Folder(Protocol):
    """Folds a stream's chunks (or events) into a :class:`ModelAnswer`, O(1) per chunk."""

    def add(self, chunk: Any) -> None: ...

    def finish(self) -> ModelAnswer: ...


class StreamedAnswer:
    """Per-stream state: the folded chunks and the once-only end."""

    __slots__ = ("_done", "_lock", "_read_turn", "folder", "on_done", "open_turn", "reported_below")

    def __init__(
        self, folder: Folder, on_done: DoneCallback, open_turn: Callable[[], Any] | None = None
    ) -> None:
        self.folder = folder
        self.on_done = on_done
        self.open_turn = open_turn
        self.reported_below = False
        self._done = False
        self._lock = threading.Lock()
        self._read_turn: Any = None

    def __enter__(self) -> None:
        """``with answer:`` around one read of the wrapped stream (``next`` / ``__anext__``,
        sync or async alike): the read runs in its own model turn, and the stream's end
        (``StopIteration`` / ``StopAsyncIteration``) or failure ends the answer. The
        exception goes on to the caller, after a STOP raised at the end of a complete
        stream in its place."""
        self._read_turn = self.enter_turn()

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        turn, self._read_turn = self._read_turn, None
        self.leave_turn(turn)
        if exc_type is None:
            return
        if exc_type is StopIteration or exc_type is StopAsyncIteration:
            self.finish()
        else:
            self.finish(error=exc, complete=False)

    def enter_turn(self) -> Any:
        """A model turn around one chunk read (``None`` without ``open_turn``, or if it
        cannot be opened)."""
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
            logger.debug("otel-loopguard: could not read a stream chunk", exc_info=True)

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
        answer: ModelAnswer | None
        try:
            answer = self.folder.finish()
        except Exception:
            logger.debug("otel-loopguard: could not fold a stream", exc_info=True)
            answer = None
        self.on_done(answer, error, complete, self.reported_below)
