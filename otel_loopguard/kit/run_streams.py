"""A run around an async generator of a framework's events, for framework wrappers.

Many agent frameworks run an invocation as an async generator the caller iterates
(``Runner.run_async`` in Google ADK, ``Agent.stream_async`` in Strands, ...). The run must
cover the framework's work, but only while the framework computes its next event, never
while the caller holds one: between two events the caller's context must not keep the run
current, or a caller that drops the generator halfway would make its next invocation look
nested in this one (and a nested run joins the enclosing one). Tasks the framework starts
during a step copy the context, so they inherit the run.

The run's ``invoke_agent`` span ends exactly once with the outcome: the end of the events,
the exception that escaped them (``LoopGuardInterrupt`` included), or the caller closing the
generator early (``GeneratorExit``, a cancelled run). Closing the framework's generator,
which may still do work that belongs to the run, happens with the run current.

Wrappers whose framework needs more per step (a context variable of its own, a check
between events) keep their own loop; this is the plain case, written once.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any, TypeVar

Item = TypeVar("Item")


async def events_in_run(run: Any, events: AsyncGenerator[Item, None]) -> AsyncGenerator[Item, None]:
    """Yield ``events`` with ``run`` (an unentered :meth:`LoopGuard.agent_run`) current only
    while the next event is computed; see the module docstring."""
    run.__enter__()
    run.suspend()
    outcome: BaseException | None = None
    try:
        while True:
            run.resume()
            try:
                event = await events.__anext__()
            except StopAsyncIteration:
                break
            finally:
                run.suspend()
            yield event
    except BaseException as exc:
        outcome = exc
        raise
    finally:
        try:
            run.resume()
            try:
                await events.aclose()
            finally:
                run.suspend()
        finally:
            if outcome is None:
                run.__exit__(None, None, None)
            else:
                run.__exit__(type(outcome), outcome, outcome.__traceback__)
