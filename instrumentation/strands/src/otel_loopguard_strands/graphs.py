"""How a STOP leaves a Strands ``Graph`` whose ready nodes run as asyncio tasks.

``Graph._execute_nodes_parallel`` runs each node of a batch in a task
(``_stream_node_to_queue``) that queues the node's events, and an ``Exception`` for the
graph to re-raise; our interrupt, raised out of a node's agent invocation, would just end
the task and the graph would go on to its next nodes and complete (see :mod:`.carried`).
So the node's task queues it as a :class:`~otel_loopguard_strands.carried.CarriedInterrupt`
and the graph's consumer raises the interrupt again: the other nodes of the batch are
cancelled and the caller gets the interrupt.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from otel_loopguard import LoopGuardInterrupt
from otel_loopguard_strands.carried import CarriedInterrupt, uncarried


def node_task_wrapper(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Wrap ``Graph._stream_node_to_queue(node, event_queue, invocation_state)``."""
    event_queue = args[1] if len(args) > 1 else kwargs.get("event_queue")
    return _queued_interrupt(wrapped(*args, **kwargs), event_queue)


async def _queued_interrupt(task: Any, event_queue: Any) -> None:
    try:
        await task
    except LoopGuardInterrupt as interrupt:
        if event_queue is None:
            raise
        # after the node's own end marker (None): the graph reads on until its tasks are
        # done, then drains the queue, so the carrier is raised either way
        await event_queue.put(CarriedInterrupt(interrupt))


def parallel_nodes_wrapper(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Wrap ``Graph._execute_nodes_parallel``: a carried interrupt leaves as itself."""
    return uncarried(wrapped(*args, **kwargs))
