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

from collections.abc import Iterator
from typing import Any

import wrapt

from otel_loopguard import LoopGuardInterrupt
from otel_loopguard.kit.held_back import HeldInterrupts

_MAILBOX = HeldInterrupts("otel_loopguard_crewai_stream_mailbox")
_DONE: Any = object()


def crew_kickoff(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if getattr(instance, "stream", False):
        output = wrapped(*args, **kwargs)
        return InterruptibleStream(output) if hasattr(output, "__iter__") else output
    try:
        return wrapped(*args, **kwargs)
    except LoopGuardInterrupt as interrupt:
        # inside the streaming worker thread: handed over, not re-raised (the worker would
        # only die with a stray traceback); it now ends the stream normally and the
        # consumer raises the interrupt
        if _MAILBOX.hold(interrupt):
            return None
        raise


class InterruptibleStream(wrapt.ObjectProxy):  # type: ignore[misc]
    """``CrewStreamingOutput`` whose iteration ends with the run's ``LoopGuardInterrupt``."""

    def __init__(self, output: Any) -> None:
        super().__init__(output)
        self._self_mailbox: list[LoopGuardInterrupt] = []

    def __iter__(self) -> Iterator[Any]:
        chunks = iter(self.__wrapped__)
        while True:
            with _MAILBOX.opened(self._self_mailbox):
                chunk = next(chunks, _DONE)
            if chunk is _DONE:
                break
            yield chunk
        _MAILBOX.raise_held(same=True, mailbox=self._self_mailbox)
