"""Bring an interrupt from CrewAI's streaming worker thread back to the consumer.

With ``Crew(stream=True)``, ``kickoff()`` returns a ``CrewStreamingOutput`` at once and runs
the crew in a daemon thread (started, with a copy of the consumer's context, when the
consumer first iterates). That thread hands ``Exception``\\ s to the consumer through a
queue but lets a ``BaseException`` kill it silently: the consumer would see an ordinary
end of stream and ``result`` would fail with "No result available".

So the consumer-side proxy puts a mailbox in the context while it asks for chunks; the
worker inherits it, the inner ``kickoff`` wrapper drops the ``LoopGuardInterrupt`` in it,
and the proxy raises it where the stream ends. The mailbox lives and dies with the stream.
Only the synchronous stream needs this: ``kickoff_async`` streams await the worker, so the
interrupt reaches their consumer unaided (tested); ``akickoff`` streams are not tested.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from typing import Any

import wrapt

from otel_loopguard import LoopGuardInterrupt

_MAILBOX: contextvars.ContextVar[list[LoopGuardInterrupt] | None] = contextvars.ContextVar(
    "otel_loopguard_crewai_stream_mailbox", default=None
)


def crew_kickoff(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if getattr(instance, "stream", False):
        output = wrapped(*args, **kwargs)
        return InterruptibleStream(output) if hasattr(output, "__iter__") else output
    mailbox = _MAILBOX.get()
    if mailbox is None:
        return wrapped(*args, **kwargs)
    try:
        return wrapped(*args, **kwargs)
    except LoopGuardInterrupt as interrupt:  # inside the streaming worker thread
        # handed over, not re-raised: the worker would only die with a stray traceback;
        # it now ends the stream normally and the consumer raises the interrupt
        mailbox.append(interrupt)
        return None


class InterruptibleStream(wrapt.ObjectProxy):  # type: ignore[misc]
    """``CrewStreamingOutput`` whose iteration ends with the run's ``LoopGuardInterrupt``."""

    def __init__(self, output: Any) -> None:
        super().__init__(output)
        self._self_mailbox: list[LoopGuardInterrupt] = []

    def __iter__(self) -> Iterator[Any]:
        chunks = iter(self.__wrapped__)
        while True:
            token = _MAILBOX.set(self._self_mailbox)
            try:
                chunk = next(chunks)
            except StopIteration:
                break
            finally:
                _MAILBOX.reset(token)
            yield chunk
        if self._self_mailbox:
            raise self._self_mailbox[0]
