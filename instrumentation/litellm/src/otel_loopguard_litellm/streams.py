"""A proxy around LiteLLM's streams that ends the call's span exactly once.

``litellm.completion(stream=True)`` and ``acompletion(stream=True)`` return a
``CustomStreamWrapper`` (LiteLLM 1.110), ``litellm.responses(stream=True)`` a Responses
streaming iterator; the caller may exhaust either, break out of, close (``close`` /
``aclose``), use as a (async) context manager, or drop half-read. Every one of those
endings funnels into the core's ``StreamedAnswer.finish``, which runs once: a complete
stream is judged (and may raise STOP from the caller's loop, in place of the end of the
stream), an unfinished one ends its span without a judgement (its answer is not known), a
dropped one does so when it is garbage-collected.

The proxy is a ``wrapt.ObjectProxy``, so ``isinstance(stream, CustomStreamWrapper)`` and
every other attribute (``stream_chunk_builder`` inputs, ``response_uses_responses_api``,
...) still work for the frameworks that inspect it.

A layer below may report the same answer while the stream is read (our OpenAI package
under ``azure/...``: its own stream ends inside one of LiteLLM's chunk reads), so each read
of a chunk runs in a model turn of its own (the core's
:class:`~otel_loopguard.kit.streamed_answer.StreamedAnswer` with ``open_turn``).
"""

from __future__ import annotations

from otel_loopguard.kit.answer_stream import AsyncReads, SyncReads


class ObservedStream(SyncReads, AsyncReads):
    """A ``CustomStreamWrapper`` that reports its chunks and its end (sync and async use);
    closed by ``close`` or ``aclose``."""

    async def aclose(self) -> None:
        await self.close_async()
