"""``invoke_agent {name}`` spans around agent and team runs, and how a STOP leaves a team.

An agent's ``run`` and ``run_stream`` are separate paths in autogen-agentchat 0.7 (``run``
calls ``on_messages``, not ``run_stream``), so both are wrapped; a team's ``run`` drains
its ``run_stream``, so only the stream is wrapped there.

A team runs its participants as handlers of an autogen-core runtime: the participant's
container catches ``Exception``, turns it into a ``GroupChatError`` and the team's
``run_stream`` raises ``RuntimeError(str(error))``. A ``BaseException`` raised in a
participant instead is stored by the runtime as a background exception that
``stop_when_idle`` re-raises, and the team's shutdown task only catches ``Exception``: no
termination message reaches the output queue and ``run_stream`` waits forever. So inside a
team our wrappers raise :class:`LoopGuardTeamInterrupt` (a ``LoopGuardInterrupt`` that is
also an ``Exception``, see :func:`interrupt_for_host`), and the team's stream wrapper turns
the ``RuntimeError`` it causes back into a plain ``LoopGuardInterrupt`` for the caller.

The stream wrapper of a single agent also checks between messages whether the run was
stopped (a vetoed call ends the agent's turn normally). A team's does not: when its
consumer stops, ``run_stream``'s ``finally`` waits for the runtime to go idle while the
participants keep talking (a looping member ran its tool three more times in our test);
the participant's own failure ends the team at once.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import AsyncGenerator, Callable
from typing import Any

from opentelemetry.trace import Tracer

from otel_loopguard.decisions import LoopGuardInterrupt
from otel_loopguard.enforcement import get_guard

logger = logging.getLogger(__name__)

Wrapper = Callable[[Any, Any, tuple[Any, ...], dict[str, Any]], Any]

# True while the code runs as a participant of a team (inherited by the runtime's tasks)
_IN_TEAM: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "otel_loopguard_autogen_in_team", default=False
)


class LoopGuardTeamInterrupt(LoopGuardInterrupt, Exception):
    """A :class:`~otel_loopguard.LoopGuardInterrupt` a team participant can fail with: the
    team's runtime only reports an ``Exception`` back to ``run_stream`` (see above)."""


def interrupt_for_host(interrupt: LoopGuardInterrupt) -> LoopGuardInterrupt:
    """The interrupt to raise from inside an agent: as is, or as a
    :class:`LoopGuardTeamInterrupt` when the agent runs in a team."""
    if not _IN_TEAM.get() or isinstance(interrupt, Exception):
        return interrupt
    team_interrupt = LoopGuardTeamInterrupt(interrupt.decision, str(interrupt))
    team_interrupt.__cause__ = interrupt.__cause__
    return team_interrupt


def run_name(runnable: Any) -> str:
    try:
        name = getattr(runnable, "name", None)
    except Exception as exc:  # a name property that fails: never our caller's problem
        get_guard().telemetry.internal_error("autogen.run_name", exc)
        name = None
    return name if isinstance(name, str) and name else type(runnable).__name__


def agent_run_wrapper(tracer: Tracer) -> Wrapper:
    """Wrap ``BaseChatAgent.run``: one agent answering one task, not streamed."""

    async def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        guard = get_guard()
        team_token = _IN_TEAM.set(False)  # a run of its own, even when a team member calls it
        try:
            with guard.agent_run(tracer, run_name(instance)):
                result = await wrapped(*args, **kwargs)
                # a vetoed tool call ends the agent's turn normally (see tools.py): stop here
                guard.check_current_run()
                return result
        finally:
            _IN_TEAM.reset(team_token)

    return wrapper


def stream_wrapper(tracer: Tracer, *, team: bool) -> Wrapper:
    """Wrap ``BaseChatAgent.run_stream`` (``team=False``) or ``BaseGroupChat.run_stream``."""

    def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        return _observed_stream(tracer, run_name(instance), wrapped(*args, **kwargs), team)

    return wrapper


async def _observed_stream(
    tracer: Tracer, name: str, stream: AsyncGenerator[Any, None], team: bool
) -> AsyncGenerator[Any, None]:
    """Yield the run's messages inside its ``invoke_agent`` span.

    The run is current only while the inner stream computes its next message, never while
    the caller holds one: a stream the caller drops halfway must not make the caller's next
    run look nested in it. A team's runtime is started inside the first step, so its tasks
    inherit the run. The span ends exactly once, also when the caller closes the stream
    early (``cancelled``).
    """
    guard = get_guard()
    run = guard.agent_run(tracer, name)
    run.__enter__()
    run.suspend()
    try:
        while True:
            run.resume()
            team_token = _IN_TEAM.set(team)
            try:
                try:
                    message = await stream.__anext__()
                except StopAsyncIteration:
                    guard.check_current_run()  # a run stopped by a vetoed call ends stopped
                    break
                except Exception as error:
                    _raise_if_stopped(guard, error)
                    raise
                if not team:  # a team's participants raise themselves (see the module docstring)
                    guard.check_current_run()
            finally:
                _IN_TEAM.reset(team_token)
                run.suspend()
            yield message
    except BaseException as exc:
        run.__exit__(type(exc), exc, exc.__traceback__)
        raise
    else:
        run.__exit__(None, None, None)
    finally:
        await stream.aclose()


def _raise_if_stopped(guard: Any, error: Exception) -> None:
    """A team fails with ``RuntimeError`` when a participant raised our team interrupt (or
    anything else after the run was stopped): the caller gets the ``LoopGuardInterrupt``."""
    try:
        guard.check_current_run()
    except LoopGuardInterrupt as interrupt:
        raise LoopGuardInterrupt(interrupt.decision, str(interrupt)) from error
    if isinstance(error, LoopGuardInterrupt):  # the run is not known to the guard any more
        raise LoopGuardInterrupt(error.decision, str(error)) from error
