"""kit.streamed_answer: a streamed model answer ends exactly once, however the stream ends."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest
import wrapt

from otel_loopguard import agent_run, get_guard
from otel_loopguard.kit.answer_stream import AsyncReads, SyncReads
from otel_loopguard.kit.openai_format import ChatChunkFolder
from otel_loopguard.kit.streamed_answer import StreamedAnswer


class Proxy(SyncReads):
    """A model SDK package's stream proxy: the kit's reading, and a close of its own."""

    def close(self) -> None:
        self._self_answer.finish(complete=False)


def _chunk(text: str, reason: str | None = None) -> dict[str, Any]:
    return {
        "id": "c-1",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": reason}],
    }


def _recorder() -> tuple[list[tuple[Any, ...]], Any]:
    ends: list[tuple[Any, ...]] = []

    def on_done(answer: Any, error: Any, complete: bool, reported_below: bool) -> None:
        ends.append((answer.finish_reason if answer else None, error, complete, reported_below))

    return ends, on_done


def test_an_exhausted_stream_ends_once_complete() -> None:
    ends, on_done = _recorder()
    proxy = Proxy(iter([_chunk("a"), _chunk("b", "stop")]), ChatChunkFolder(), on_done)
    assert [c["choices"][0]["delta"]["content"] for c in proxy] == ["a", "b"]
    proxy.close()  # a close after the end changes nothing
    assert ends == [("stop", None, True, False)]


def test_a_stream_left_early_or_failing_ends_once_incomplete() -> None:
    ends, on_done = _recorder()
    proxy = Proxy(iter([_chunk("a"), _chunk("b")]), ChatChunkFolder(), on_done)
    next(proxy)
    proxy.close()
    proxy.close()
    assert ends == [(None, None, False, False)]

    class Broken:
        def __next__(self) -> Any:
            raise ConnectionError("reset")

    failing_ends, failing_done = _recorder()
    failing = Proxy(Broken(), ChatChunkFolder(), failing_done)
    with pytest.raises(ConnectionError):
        next(failing)
    assert len(failing_ends) == 1 and isinstance(failing_ends[0][1], ConnectionError)
    assert failing_ends[0][2] is False


def test_a_dropped_stream_ends_when_collected_and_a_bad_chunk_never_breaks_it() -> None:
    ends, on_done = _recorder()
    answer = StreamedAnswer(ChatChunkFolder(), on_done)
    answer.add(object())  # a chunk shape the folder does not know: logged, not raised
    del answer
    gc.collect()
    assert ends == [(None, None, False, False)]


def test_a_report_from_below_during_a_read_is_remembered(make_kit: Any) -> None:
    kit = make_kit()
    ends, on_done = _recorder()

    class Below:
        """The layer below reports while one chunk is read (an SDK stream ending inside)."""

        def __init__(self) -> None:
            self.left = [_chunk("a", "stop")]

        def __next__(self) -> Any:
            if not self.left:
                get_guard().observe_llm_response(model="below", output_tokens=1)
                raise StopIteration
            return self.left.pop()

    with agent_run("a", tracer=kit.tracer):
        proxy = Proxy(Below(), ChatChunkFolder(), on_done, open_turn=kit.guard.model_turn)
        assert len(list(proxy)) == 1
    assert ends == [("stop", None, True, True)]


class _IterableOnly(wrapt.ObjectProxy):  # type: ignore[misc]
    """Another instrumentation's proxy of the SDK's stream: ``__iter__`` / ``__aiter__`` of its
    own, no ``__next__`` / ``__anext__`` (``proxy.__next__`` reaches the stream it wraps)."""

    def __init__(self, wrapped: Any, read: list[Any]) -> None:
        super().__init__(wrapped)
        self._self_read = read

    def __iter__(self) -> Any:
        for chunk in self.__wrapped__:
            self._self_read.append(chunk)
            yield chunk

    async def __aiter__(self) -> Any:
        async for chunk in self.__wrapped__:
            self._self_read.append(chunk)
            yield chunk


class AsyncProxy(AsyncReads):
    async def close_async(self) -> None:
        self._self_answer.finish(complete=False)


def test_a_stream_behind_an_iterable_only_proxy_is_read_through_it() -> None:
    ends, on_done = _recorder()
    read: list[Any] = []
    chunks = [_chunk("a"), _chunk("b", "stop")]
    proxy = Proxy(_IterableOnly(iter(chunks), read), ChatChunkFolder(), on_done)
    assert list(proxy) == chunks
    assert read == chunks  # their proxy saw every chunk: it was not bypassed
    assert ends == [("stop", None, True, False)]


def test_an_async_stream_behind_an_iterable_only_proxy_is_read_through_it() -> None:
    ends, on_done = _recorder()
    read: list[Any] = []
    chunks = [_chunk("a"), _chunk("b", "stop")]

    async def sdk_stream() -> Any:
        for chunk in chunks:
            yield chunk

    async def main() -> list[Any]:
        proxy = AsyncProxy(_IterableOnly(sdk_stream(), read), ChatChunkFolder(), on_done)
        return [chunk async for chunk in proxy]

    assert asyncio.run(main()) == chunks
    assert read == chunks
    assert ends == [("stop", None, True, False)]
