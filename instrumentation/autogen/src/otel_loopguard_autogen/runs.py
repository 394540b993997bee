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

from otel_loopguard import LoopGuardInterrupt, get_guard
from otel_loopguard.kit.run_streams import aclose_stream, async_items
from otel_loopguard.kit.scoped_call import Wrapper

logger = logging.getLogger(__name__)


class _RunScope:
    """What our wrappers share within one run: whether it is a team's, and the interrupt
    raised in it that autogen made us hold back (see :func:`raise_if_stopped`). Mutable, so
    the tasks autogen starts with a copy of the context share it."""

    __slots__ = ("in_team", "interrupt")

    def __init__(self, in_team: bool) -> None:
        self.in_team = in_team
        self.interrupt: LoopGuardInterrupt | None = None


_SCOPE: contextvars.ContextVar[_RunScope | None] = contextvars.ContextVar(
    "otel_loopguard_autogen_run_scope", default=None
)


class LoopGuardTeamInterrupt(LoopGuardInterrupt, Exception):
    """A :class:`~otel_loopguard.LoopGuardInterrupt` a team participant can fail with: the
    team's runtime only reports an ``Exception`` back to ``run_stream`` (see above)."""


def hold_back(interrupt: LoopGuardInterrupt) -> None:
    """Remember an interrupt we cannot raise where it happened (a tool call in
    ``asyncio.gather``), or that leaves a team as its ``RuntimeError``."""
    scope = _SCOPE.get()
    if scope is not None:
        scope.interrupt = interrupt


def interrupt_for_host(interrupt: LoopGuardInterrupt) -> LoopGuardInterrupt:
    """The interrupt to raise from inside an agent: as is, or as a
    :class:`LoopGuardTeamInterrupt` when the agent runs in a team."""
    hold_back(interrupt)
    scope = _SCOPE.get()
    if scope is None or not scope.in_team or isinstance(interrupt, Exception):
        return interrupt
    team_interrupt = LoopGuardTeamInterrupt(interrupt.decision, str(interrupt))
    team_interrupt.__cause__ = interrupt.__cause__
    return team_interrupt


def raise_if_stopped(guard: Any, cause: BaseException | None = None) -> None:
    """Raise ``LoopGuardInterrupt`` (enforce mode) when the current run is stopped.

    An interrupt already raised in this run and held back is raised again as a plain one,
    without counting it a second time in ``loopguard.interrupts``; otherwise the guard's own
    check raises (and counts) it.
    """
    scope = _SCOPE.get()
    held = scope.interrupt if scope is not None else None
    if held is not None:
        raise LoopGuardInterrupt(held.decision, str(held)) from cause
    try:
        guard.check_current_run()
    except LoopGuardInterrupt as interrupt:
        if cause is None:
            raise
        raise LoopGuardInterrupt(interrupt.decision, str(interrupt)) from cause


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
        # a run of its own, even when a team member calls it
        scope_token = _SCOPE.set(_RunScope(in_team=False))
        try:
            with guard.agent_run(tracer, run_name(instance)):
                result = await wrapped(*args, **kwargs)
                # a vetoed tool call ends the agent's turn normally (see tools.py): stop here
                raise_if_stopped(guard)
                return result
        finally:
            _SCOPE.reset(scope_token)

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
    scope = _RunScope(in_team=team)
    run = guard.agent_run(tracer, name)
    run.__enter__()
    run.suspend()
    outcome: BaseException | None = None
    items: Any = None
    try:
        while True:
            run.resume()
            scope_token = _SCOPE.set(scope)
            try:
                try:
                    if items is None:  # another instrumentation's iterable proxy too
                        items = async_items(stream)
                    message = await items.__anext__()
                except StopAsyncIteration:
                    raise_if_stopped(guard)  # a run stopped by a vetoed call ends stopped
                    break
                except Exception as error:
                    # a team fails with RuntimeError when a member raised our team interrupt
                    raise_if_stopped(guard, cause=error)
                    raise
                if not team:  # a team's participants raise themselves (see the module docstring)
                    raise_if_stopped(guard)
            finally:
                _SCOPE.reset(scope_token)
                run.suspend()
            yield message
    except LoopGuardInterrupt as interrupt:
        outcome = interrupt
        # a team that is itself a team's participant (directly, or in a SocietyOfMindAgent)
        # must fail with an Exception too: our scope is reset here, the enclosing one decides
        raise interrupt_for_host(interrupt) from interrupt.__cause__
    except BaseException as exc:
        outcome = exc
        raise
    finally:
        try:
            # closed early: the team's run_stream waits here until its runtime is idle, and
            # what its members still do belongs to the run
            run.resume()
            try:
                await aclose_stream(items, stream)
            finally:
                run.suspend()
        finally:
            if outcome is None:
                run.__exit__(None, None, None)
            else:
                run.__exit__(type(outcome), outcome, outcome.__traceback__)
