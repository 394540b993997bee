"""A model SDK's stream behind a proxy whose every ending reaches one StreamedAnswer.

Every model SDK package hands the caller its SDK's stream behind a ``wrapt.ObjectProxy``
(``isinstance`` and every attribute of the real stream still work) that reads each chunk
in the answer's own model turn and folds it (:class:`~otel_loopguard.kit.streamed_answer.
StreamedAnswer`), and that, closed (``close``, ``with``, ``async with``), closes the SDK's
stream and ends the answer unfinished. That is the same for every SDK and is written here
once; a package's proxy adds only what its SDK has beyond it (the OpenAI SDK's
``response``, the name of its awaitable close).

A proxy takes :class:`SyncReads`, :class:`AsyncReads` or both, as its SDK's stream
iterates: a sync stream must not look async-iterable to a framework that asks. The stream it
wraps may be only iterable (another instrumentation's proxy with ``__iter__`` / ``__aiter__``
and no ``__next__`` / ``__anext__``): it is read through the iterator those give, taken at the
first read (``_self_items``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import wrapt

from otel_loopguard.kit.run_streams import async_items, sync_items
from otel_loopguard.kit.streamed_answer import DoneCallback, Folder, StreamedAnswer


class AnswerStream(wrapt.ObjectProxy):  # type: ignore[misc]
    """A stream and the answer its chunks fold into (``_self_answer``)."""

    def __init__(
        self,
        stream: Any,
        folder: Folder,
        on_done: DoneCallback,
        open_turn: Callable[[], Any] | None = None,
    ) -> None:
        super().__init__(stream)
        self._self_answer = StreamedAnswer(folder, on_done, open_turn)
        self._self_items: Any = None  # the iterator read, taken at the first read


class SyncReads(AnswerStream):
    """``for chunk in stream``: each read in a model turn of its own; its end or failure
    ends the answer. ``close()`` and ``with`` close the SDK's stream (when it has a
    ``close``) and end the answer unfinished."""

    def __iter__(self) -> Any:
        return self

    def __next__(self) -> Any:
        with self._self_answer:
            items = self._self_items
            if items is None:
                items = self._self_items = sync_items(self.__wrapped__)
            chunk = next(items)
        self._self_answer.add(chunk)
        return chunk

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def close(self) -> None:
        try:
            close = getattr(self.__wrapped__, "close", None)
            if close is not None:
                close()
        finally:
            self._self_answer.finish(complete=False)


class AsyncReads(AnswerStream):
    """``async for chunk in stream``, as :class:`SyncReads`; ``async with`` closes by
    :meth:`close_async`, which the proxy also offers under its SDK's name for it."""

    #: the SDK stream's awaitable close: ``aclose`` (LiteLLM), ``close`` (OpenAI)
    async_close_name: ClassVar[str] = "aclose"

    def __aiter__(self) -> Any:
        return self

    async def __anext__(self) -> Any:
        with self._self_answer:
            items = self._self_items
            if items is None:
                items = self._self_items = async_items(self.__wrapped__)
            chunk = await items.__anext__()
        self._self_answer.add(chunk)
        return chunk

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close_async()

    async def close_async(self) -> None:
        """Close the SDK's stream (when it has the close named ``async_close_name``) and
        end the answer unfinished."""
        try:
            close = getattr(self.__wrapped__, self.async_close_name, None)
            if close is not None:
                await close()
        finally:
            self._self_answer.finish(complete=False)


__all__ = ["AnswerStream", "AsyncReads", "SyncReads"]
