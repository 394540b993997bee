"""Our interrupt across the asyncio tasks Strands runs work in and does not wait on for a
``BaseException``.

Strands runs a turn's tool uses (``ConcurrentToolExecutor``) and a graph's ready nodes
(``Graph._execute_nodes_parallel``) as asyncio tasks that report an ``Exception`` to their
consumer through a queue, which re-raises it and cancels the other tasks; a
``BaseException`` such as :class:`~otel_loopguard.LoopGuardInterrupt` just ends the task,
the consumer sees it finish and goes on as if it had returned (the agent asks its model
again, the graph runs its next nodes and completes). So in such a task the interrupt
travels as a :class:`CarriedInterrupt`, an ``Exception``, and our wrapper of the consumer
(:func:`uncarried`) raises the interrupt itself again: it never reaches the caller or any
other Strands code as a carrier.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

from otel_loopguard import LoopGuardInterrupt


class CarriedInterrupt(Exception):
    """A :class:`~otel_loopguard.LoopGuardInterrupt` on its way out of a Strands task."""

    def __init__(self, interrupt: LoopGuardInterrupt) -> None:
        super().__init__(str(interrupt))
        self.interrupt = interrupt


async def uncarried(events: AsyncGenerator[object, None]) -> AsyncGenerator[object, None]:
    """Yield ``events``; a carried interrupt they raise leaves as the interrupt itself."""
    try:
        async for event in events:
            yield event
    except CarriedInterrupt as carried:
        interrupt = carried.interrupt
        raise interrupt from interrupt.__cause__
    finally:
        await events.aclose()
