"""``invoke_agent {name}`` spans around Agno agent and team runs, one otel-loopguard run each.

Why these hook points (agno 3.1): ``Agent.run`` / ``Agent.arun`` (and ``Team``'s) only
dispatch; the run itself is one of four module functions of ``agno.agent._run`` (and of
``agno.team._run``): ``_run``, ``_run_stream`` (a generator), ``_arun`` and ``_arun_stream``
(an async generator). The dispatchers, ``print_response`` and the background runs of
``arun(background=True)`` look them up in their module when they call them, so wrapping the
module attributes reaches every run, streamed or not, with its session already resolved
(``run_response.session_id``).

The run is keyed by that session id. Agno's own tracing (``agno.tracing.setup_tracing``,
which is OpenInference's Agno instrumentation) stamps it on its agent spans as
``session.id``, and the span processor keys what it reads in that trace (the model spans of
that instrumentation, under ``opentelemetry-instrument``) by it; a run keyed otherwise would
lose those turns to a run of its own. An Agno agent keeps its session between runs unless
it is given one (``agent.run(..., session_id=...)``): as DESIGN's run identity says, a
session's counters outlive one run, so a session stopped in ``enforce`` mode stays stopped
(until idle past ``run_ttl``), and its next run is interrupted before its first model call;
start a new session to go on. A run inside a run (a team's member, an agent called from a
tool) is part of the enclosing run; a team gives its members its own session anyway.

How a :class:`~otel_loopguard.LoopGuardInterrupt` (a ``BaseException``) leaves agno 3.1: the
run functions catch ``Exception`` (and ``KeyboardInterrupt``, cancellation) and turn it into
a ``RunOutput`` with status ``error``; our interrupt passes through all of them and out of
``run`` / ``arun`` (or the stream) as itself. A run that Agno ended with status ``error`` or
``cancelled`` ends with that ``loopguard.run.state``.

One trap: in an async run, a tool that returns an async generator (a team's
``adelegate_task_to_member``, which runs the member) is drained in a task of its own that
catches ``Exception`` and otherwise never signals that it is done: an interrupt raised there
(the member's loop) would leave the run waiting forever. So :mod:`.tools` holds such an
interrupt back in the run (:func:`hold_back`, the generator then ends), and it is raised
again, as the same decision and not counted twice, before the run's next model call or when
the run returns (:func:`raise_held`).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import Any

from opentelemetry.trace import Tracer

from otel_loopguard import LoopGuardInterrupt, RunEndState, current_run, get_guard
from otel_loopguard.kit.held_back import HeldInterrupts
from otel_loopguard.kit.run_streams import aclose_stream, async_items, run_over
from otel_loopguard.kit.scoped_call import PlainScope, Wrapper, scoped_wrapper

#: Agno's ``RunStatus`` values (a ``str`` enum) of a returned ``RunOutput``, and the events
#: a streamed run yields instead, that end a run otherwise than completed
_END_STATES = {
    "ERROR": RunEndState.ERROR,
    "CANCELLED": RunEndState.CANCELLED,
    "RunError": RunEndState.ERROR,
    "TeamRunError": RunEndState.ERROR,
    "RunCancelled": RunEndState.CANCELLED,
    "TeamRunCancelled": RunEndState.CANCELLED,
}


#: interrupts held back in the current async run (see the module docstring): a mailbox
#: shared by the tasks of the run, which copy the context
HELD = HeldInterrupts("otel_loopguard_agno_held")
#: keep an interrupt for :func:`raise_held`; False outside an async run (raise it then)
hold_back = HELD.hold
#: raise the interrupt held back in this run, if any, as the same decision
raise_held = HELD.raise_held


def _run_holds() -> list[LoopGuardInterrupt]:
    """Call before the run starts: the held interrupts of the enclosing run, or a fresh
    list for an outermost run."""
    return HELD.mailbox(inherit=current_run() is not None)


def _describe(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, str | None]:
    """The agent's (or team's) name and the session to key the run by, from the run
    function's ``(agent_or_team, run_response, ...)``."""
    runnable = args[0] if args else kwargs.get("agent", kwargs.get("team"))
    name = getattr(runnable, "name", None)
    if not isinstance(name, str) or not name:
        name = type(runnable).__name__
    run_response = args[1] if len(args) > 1 else kwargs.get("run_response")
    session_id = getattr(run_response, "session_id", None)
    if current_run() is not None:
        # a member of a team, an agent run from a tool: part of the enclosing run
        session_id = None
    return name, session_id if isinstance(session_id, str) and session_id else None


def _run_scope(tracer: Tracer, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    guard = get_guard()
    try:
        name, session = _describe(args, kwargs)
    except Exception as exc:  # a run shape we do not know: a run of its own, unnamed
        guard.telemetry.internal_error("agno.run", exc)
        name, session = "agno", None
    return guard.agent_run(tracer, name, conversation_id=session)


def _note_status(guard: Any, handle: Any, run_id: Any, item: Any) -> None:
    """End the run as Agno ended it when Agno caught the failure itself: the run's
    ``RunOutput`` with status ``error`` / ``cancelled``, or its own error or cancelled event
    (not one of a member or a nested agent, which Agno may pass on in the stream)."""
    try:
        if getattr(item, "run_id", None) != run_id:
            return
        label = getattr(item, "event", None)
        if label is None:
            label = getattr(getattr(item, "status", None), "value", None)
        state = _END_STATES.get(label) if isinstance(label, str) else None
        if state is not None and handle.state is None:
            handle.set_state(state)
    except Exception as exc:  # never let our bookkeeping break the agent
        guard.telemetry.internal_error("agno.run_status", exc)


def _run_id(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    run_response = args[1] if len(args) > 1 else kwargs.get("run_response")
    return getattr(run_response, "run_id", None)


class _RunScope(PlainScope):
    """One run of ``_run`` / ``_arun`` (a :class:`~otel_loopguard.kit.scoped_call.Scope`):
    the run open around the call, its end state from the ``RunOutput``; an async run also
    keeps the interrupts held back in it (see the module docstring) and raises the one held
    back when the run returns."""

    __slots__ = ("_handle", "_held", "_opened", "_run", "_run_id")

    def __init__(self, run: Any, run_id: Any, held: list[LoopGuardInterrupt] | None) -> None:
        self._run = run
        self._run_id = run_id
        self._held = held
        self._handle: Any = None
        self._opened: Any = None

    def __enter__(self) -> Any:
        if self._held is not None:
            self._opened = HELD.opened(self._held)
            self._opened.__enter__()
        try:
            self._handle = self._run.__enter__()
        except BaseException:
            self._close()
            raise
        return self._handle

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> Any:
        try:
            return self._run.__exit__(exc_type, exc, tb)
        finally:
            self._close()

    def _close(self) -> None:
        opened, self._opened = self._opened, None
        if opened is not None:
            opened.__exit__(None, None, None)

    def inside(self, output: Any) -> Any:
        if self._held is not None:
            raise_held()
        _note_status(get_guard(), self._handle, self._run_id, output)
        return output


def run_wrapper(tracer: Tracer, *, asynchronous: bool) -> Wrapper:
    """Wrap ``_run(agent_or_team, run_response, ...)``, which returns the run's output, or
    ``_arun`` (``asynchronous``), a coroutine."""

    def open_scope(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _RunScope:
        held = _run_holds() if asynchronous else None  # before the run starts
        return _RunScope(_run_scope(tracer, args, kwargs), _run_id(args, kwargs), held)

    return scoped_wrapper(open_scope, asynchronous=asynchronous)


def run_stream_wrapper(tracer: Tracer, *, asynchronous: bool) -> Wrapper:
    """Wrap ``_run_stream(...)``, a generator of run events, or ``_arun_stream``
    (``asynchronous``), an async generator: the run current only while Agno computes the next
    event (:func:`~otel_loopguard.kit.run_streams.run_over`), its end state from Agno's own
    error or cancelled event; an async run also keeps its held-back interrupts
    (:func:`_held_events`)."""

    def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        held = _run_holds() if asynchronous else None  # before the run starts
        run = _run_scope(tracer, args, kwargs)
        run_id = _run_id(args, kwargs)
        events = wrapped(*args, **kwargs)
        if held is not None:
            events = _held_events(held, events)

        def on_event(handle: Any, event: Any) -> None:
            _note_status(get_guard(), handle, run_id, event)

        return run_over(run, events, on_event)

    return wrapper


async def _held_events(
    held: list[LoopGuardInterrupt], events: AsyncGenerator[Any, None]
) -> AsyncGenerator[Any, None]:
    """``_arun_stream``'s events, each computed with the run's held interrupts in reach (see
    the module docstring), the one held back raised at the end."""
    items = async_items(events)  # another instrumentation's iterable proxy too
    try:
        while True:
            with HELD.opened(held):
                try:
                    event = await items.__anext__()
                except StopAsyncIteration:
                    raise_held()
                    return
            yield event
    finally:
        await aclose_stream(items, events)
