"""Stream proxies: observe a streamed model answer and finish its span exactly once.

The SDK hands back ``Stream`` / ``AsyncStream`` objects that the caller may exhaust, break
out of, close, use as a context manager, or hand to the SDK's own helpers
(``ChatCompletionStream`` / ``ResponseStream``), which iterate the raw stream and later
close only its ``response``. Every one of those endings must end the ``chat`` span once, so
each path funnels into the core's :meth:`StreamedAnswer.finish
<otel_loopguard.kit.streamed_answer.StreamedAnswer.finish>`, which runs its callback at most once
(a stream dropped half-read ends its span when it is garbage-collected).

At the end of a complete stream the callback may raise ``LoopGuardInterrupt`` (enforce
mode, STOP): the proxy then stops being consumed, and the caller gets the interrupt from
its ``for`` loop instead of the end of the stream.
"""

from __future__ import annotations

from typing import Any

import wrapt

from otel_loopguard.kit.answer_stream import AnswerStream, AsyncReads, SyncReads
from otel_loopguard.kit.streamed_answer import DoneCallback, Folder, StreamedAnswer


class _ClosingResponse(wrapt.ObjectProxy):  # type: ignore[misc]
    """The stream's HTTP response; closing it (what the SDK's stream helpers do) ends the span."""

    def __init__(self, response: Any, answer: StreamedAnswer) -> None:
        super().__init__(response)
        self._self_answer = answer

    def close(self) -> None:
        try:
            self.__wrapped__.close()
        finally:
            self._self_answer.finish(complete=False)

    async def aclose(self) -> None:
        try:
            await self.__wrapped__.aclose()
        finally:
            self._self_answer.finish(complete=False)


class _ObservedStream(AnswerStream):
    """What the sync and async proxies share beyond reading: the closing response."""

    def __init__(self, stream: Any, folder: Folder, on_done: DoneCallback) -> None:
        super().__init__(stream, folder, on_done)
        self._self_response: Any = None

    @property
    def response(self) -> Any:
        if self._self_response is None:
            self._self_response = _ClosingResponse(self.__wrapped__.response, self._self_answer)
        return self._self_response


class ObservedStream(_ObservedStream, SyncReads):
    """A synchronous ``openai.Stream`` that reports its chunks and its end."""


class ObservedAsyncStream(_ObservedStream, AsyncReads):
    """An ``openai.AsyncStream`` that reports its chunks and its end; its close is
    awaitable ``close``."""

    async_close_name = "close"

    async def close(self) -> None:
        await self.close_async()
