"""Stream proxies: observe a streamed model answer and finish its span exactly once.

The SDK hands back ``Stream`` / ``AsyncStream`` objects that the caller may exhaust, break
out of, close, use as a context manager, or hand to the SDK's own helpers
(``ChatCompletionStream`` / ``ResponseStream``), which iterate the raw stream and later
close only its ``response``. Every one of those endings must end the ``chat`` span once, so
each path funnels into the core's :meth:`StreamedAnswer.finish
<otel_loopguard.streamed_answer.StreamedAnswer.finish>`, which runs its callback at most once
(a stream dropped half-read ends its span when it is garbage-collected).

At the end of a complete stream the callback may raise ``LoopGuardInterrupt`` (enforce
mode, STOP): the proxy then stops being consumed, and the caller gets the interrupt from
its ``for`` loop instead of the end of the stream.
"""

from __future__ import annotations

from typing import Any

import wrapt

from otel_loopguard.streamed_answer import DoneCallback, Folder, StreamedAnswer


class _ClosingResponse(wrapt.ObjectProxy):  # type: ignore[misc]
    """The stream's HTTP response; closing it (what the SDK's stream helpers do) ends the span."""

    def __init__(self, response: Any, observer: StreamedAnswer) -> None:
        super().__init__(response)
        self._self_observer = observer

    def close(self) -> None:
        try:
            self.__wrapped__.close()
        finally:
            self._self_observer.finish(complete=False)

    async def aclose(self) -> None:
        try:
            await self.__wrapped__.aclose()
        finally:
            self._self_observer.finish(complete=False)


class ObservedStream(wrapt.ObjectProxy):  # type: ignore[misc]
    """A synchronous ``openai.Stream`` that reports its chunks and its end."""

    def __init__(self, stream: Any, folder: Folder, on_done: DoneCallback) -> None:
        super().__init__(stream)
        self._self_observer = StreamedAnswer(folder, on_done)
        self._self_response: Any = None

    @property
    def response(self) -> Any:
        if self._self_response is None:
            self._self_response = _ClosingResponse(self.__wrapped__.response, self._self_observer)
        return self._self_response

    def __iter__(self) -> ObservedStream:
        return self

    def __next__(self) -> Any:
        try:
            item = next(self.__wrapped__)
        except StopIteration:
            self._self_observer.finish()
            raise
        except BaseException as exc:
            self._self_observer.finish(error=exc, complete=False)
            raise
        self._self_observer.add(item)
        return item

    def __enter__(self) -> ObservedStream:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.__wrapped__.close()
        finally:
            self._self_observer.finish(complete=False)


class ObservedAsyncStream(wrapt.ObjectProxy):  # type: ignore[misc]
    """An ``openai.AsyncStream`` that reports its chunks and its end."""

    def __init__(self, stream: Any, folder: Folder, on_done: DoneCallback) -> None:
        super().__init__(stream)
        self._self_observer = StreamedAnswer(folder, on_done)
        self._self_response: Any = None

    @property
    def response(self) -> Any:
        if self._self_response is None:
            self._self_response = _ClosingResponse(self.__wrapped__.response, self._self_observer)
        return self._self_response

    def __aiter__(self) -> ObservedAsyncStream:
        return self

    async def __anext__(self) -> Any:
        try:
            item = await self.__wrapped__.__anext__()
        except StopAsyncIteration:
            self._self_observer.finish()
            raise
        except BaseException as exc:
            self._self_observer.finish(error=exc, complete=False)
            raise
        self._self_observer.add(item)
        return item

    async def __aenter__(self) -> ObservedAsyncStream:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()

    async def close(self) -> None:
        try:
            await self.__wrapped__.close()
        finally:
            self._self_observer.finish(complete=False)
