"""The reading half of a model SDK's stream proxy: chunks folded into one StreamedAnswer.

Every model SDK package hands the caller its SDK's stream behind a ``wrapt.ObjectProxy``
(``isinstance`` and every attribute of the real stream still work) that reads each chunk
in the answer's own model turn and folds it (:class:`~otel_loopguard.kit.streamed_answer.
StreamedAnswer`). That reading is the same for every SDK and is written here once. How a
stream is closed is not (``close``, ``aclose``, an awaitable ``close``, a response object
to close): each package's proxy adds its own, funnelled into ``finish(complete=False)``.

A proxy takes :class:`SyncReads`, :class:`AsyncReads` or both, as its SDK's stream
iterates: a sync stream must not look async-iterable to a framework that asks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import wrapt

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


class SyncReads(AnswerStream):
    """``for chunk in stream``: each read in a model turn of its own; its end or failure
    ends the answer."""

    def __iter__(self) -> Any:
        return self

    def __next__(self) -> Any:
        with self._self_answer:
            chunk = next(self.__wrapped__)
        self._self_answer.add(chunk)
        return chunk


class AsyncReads(AnswerStream):
    """``async for chunk in stream``, as :class:`SyncReads`."""

    def __aiter__(self) -> Any:
        return self

    async def __anext__(self) -> Any:
        with self._self_answer:
            chunk = await self.__wrapped__.__anext__()
        self._self_answer.add(chunk)
        return chunk


__all__ = ["AnswerStream", "AsyncReads", "SyncReads"]
