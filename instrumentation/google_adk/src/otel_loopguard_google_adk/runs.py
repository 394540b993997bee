"""``invoke_agent {name}`` spans around ADK invocations, and how a STOP reaches the caller.

``Runner.run_async`` is an invocation's one entry point: the synchronous ``Runner.run``
drives it on a thread of its own, and the runner's root agent (a lone ``LlmAgent``, an agent
with sub-agents, a workflow) runs under it as a task that inherits the run.

The run is keyed by the invocation's ``session_id``: ADK itself stamps it on its own spans as
``gen_ai.conversation.id``, and the span processor keys what it reads from those spans (under
``opentelemetry-instrument`` ADK's ``generate_content`` spans report the model turns) by that
conversation. A run keyed otherwise would lose those turns to a run of its own. As DESIGN's
run identity says, a conversation's counters outlive one invocation: a session stopped in
``enforce`` mode stays stopped (until idle past ``run_ttl``), so the next message in it is
interrupted before its first model call; start a new session to go on. A runner invoked
inside a run (``AgentTool`` runs its agent in a runner of its own, with a throwaway session)
is part of the enclosing run.

How a :class:`~otel_loopguard.LoopGuardInterrupt` (a ``BaseException``) leaves ADK 2.13:

* ``run_async``: the root agent's task fails with it; the runner drains the events already
  queued, awaits the task and re-raises it as is. Tool calls run in tasks gathered by
  ``_gather_or_cancel``, which cancels the siblings of a failed call and re-raises: nothing
  waits for a vetoed call (AutoGen's gather did).
* ``run``: the background thread forwards any non-``Exception`` as ``RuntimeError("Agent run
  terminated by LoopGuardInterrupt.")`` chained to it, so the caller could not tell a stop
  from a crash; our wrapper re-raises the interrupt itself.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from opentelemetry.trace import Tracer

from otel_loopguard import LoopGuardInterrupt, current_run, get_guard
from otel_loopguard.kit.run_streams import events_in_run
from otel_loopguard.kit.scoped_call import Wrapper


def _root_agent_name(runner: Any) -> str:
    try:
        name = getattr(getattr(runner, "agent", None), "name", None)
    except Exception as exc:  # a name property that fails: never our caller's problem
        get_guard().telemetry.internal_error("google_adk.run_name", exc)
        name = None
    return name if isinstance(name, str) and name else type(runner).__name__


def run_async_wrapper(tracer: Tracer) -> Wrapper:
    """Wrap ``Runner.run_async(*, user_id, session_id, ...)``, an async generator of events."""

    def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        session_id = kwargs.get("session_id")
        conversation = session_id if isinstance(session_id, str) and session_id else None
        if current_run() is not None:
            # a runner inside a run (``AgentTool`` runs its agent in a runner of its own,
            # in a throwaway session): part of the enclosing run, as nested agents are
            conversation = None
        run = get_guard().agent_run(
            tracer, _root_agent_name(instance), conversation_id=conversation
        )
        # the run current only while the next event is computed (kit.run_streams)
        return events_in_run(run, wrapped(*args, **kwargs))

    return wrapper


def run_wrapper(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Wrap ``Runner.run``, the synchronous generator that drives ``run_async`` on a thread."""
    return _unwrapped_interrupts(wrapped(*args, **kwargs))


def _unwrapped_interrupts(events: Generator[Any, None, None]) -> Generator[Any, None, None]:
    try:
        yield from events
    except RuntimeError as error:
        cause = error.__cause__
        if isinstance(cause, LoopGuardInterrupt):
            # the interrupt itself, with its own cause (the tool's error, if any)
            raise cause from cause.__cause__
        raise
