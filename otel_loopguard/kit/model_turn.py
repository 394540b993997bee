"""The model-turn wrapper: one agent step's model call, checked before and reported once.

A framework package wraps the method its framework asks the model through once per step
(an agent step, a model node, the executor's ``get_llm_response``) and does the same around
it, for a plain method and a coroutine method alike (see :mod:`.scoped_call`):

- before the call: the pre-flight check (``guard.preflight_llm()``: a stopped run,
  ``max_steps`` reached, the run's ``timeout`` passed, no token headroom left); in
  ``enforce`` mode a vetoed call is never made;
- around it: a :meth:`model turn <otel_loopguard.LoopGuard.model_turn>`, so a layer below
  that reports the same turn (a model SDK's instrumentation) is noticed;
- after it: one ``llm_response`` (``guard.observe_llm_response(**read(call))``), unless a
  layer below reported the turn or the call was made outside any run. In ``enforce`` mode a
  STOP raises here, before the tools the model asked for run.

- delivery (``deliver=``): in ``enforce`` mode, a replan's recommendation waiting for the
  run goes into this call's request (:mod:`.recommendations`); with ``again=`` (and
  ``join=``) a truncated answer, or an empty give-up after failing tools, on which the
  framework would end the turn, is asked again at once and the joined (or new) answer
  returned.

A package writes ``read`` (and, to deliver, ``deliver``): the framework's answer as
``observe_llm_response`` keyword arguments (``model``, ``finish_reason``, ``input_tokens``,
``output_tokens``, ``empty``, ``requested_tool_calls``, ``agent_name``, ``response_id``),
or ``None`` for nothing to report. A ``read`` that raises is counted in
``loopguard.internal_errors`` as ``<package>.model_turn`` and the turn is not reported;
the framework's answer goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from otel_loopguard.engine.interrupt import LoopGuardInterrupt
from otel_loopguard.guard.global_guard import get_guard
from otel_loopguard.guard.run_context import current_run
from otel_loopguard.kit.recommendations import (
    Again,
    Deliver,
    Join,
    can_deliver,
    combined_answer,
    deliver_waiting,
    reask_request,
    reasks_allowed,
    waiting_detector,
)
from otel_loopguard.kit.scoped_call import Scope, Wrapper, is_async, scoped_wrapper


@dataclass(slots=True)
class ModelCall:
    """One wrapped model call, as ``read`` and the other hooks see it."""

    instance: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    #: what ``before(call)`` returned, just before the call (usage counters, the history)
    before: Any = None
    #: the wrapped method's return value (``None`` when it raised)
    result: Any = None
    #: the exception the call raised (only seen with ``report_failed``)
    error: BaseException | None = None


#: ``read(call)``: ``observe_llm_response`` keyword arguments, or ``None``
ReadAnswer = Callable[[ModelCall], "Mapping[str, Any] | None"]
#: ``applies(instance, args, kwargs)``: False to run the call untouched
Applies = Callable[[Any, tuple[Any, ...], dict[str, Any]], bool]
#: ``interrupt(loopguard_interrupt)``: the exception to raise instead (a framework that
#: carries only its own exception type out of a step)
Translate = Callable[[LoopGuardInterrupt], BaseException]


def in_a_run(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """``applies`` for a wrapper that leaves a model called outside any run alone."""
    return current_run() is not None


def report_turn(
    guard: Any,
    package: str,
    read: Callable[..., Mapping[str, Any] | None],
    *args: Any,
    raise_on_stop: bool = True,
    interrupt: Translate | None = None,
) -> None:
    """One ``llm_response`` for the answer ``read(*args)`` describes (``None``: nothing to
    report). A failing ``read`` is counted as ``<package>.model_turn``; raises only
    ``LoopGuardInterrupt`` (or what ``interrupt`` makes of it), only with ``raise_on_stop``."""
    try:
        report = read(*args)
        if report is None:
            return
    except Exception as exc:  # never let our bookkeeping break the agent
        guard.telemetry.internal_error(f"{package}.model_turn", exc)
        return
    try:
        guard.observe_llm_response(**report, raise_on_stop=raise_on_stop)
    except LoopGuardInterrupt as stop:
        if interrupt is None:
            raise
        raise interrupt(stop) from None


def model_turn_wrapper(
    read: ReadAnswer,
    *,
    package: str,
    applies: Applies | None = None,
    before: Callable[[ModelCall], Any] | None = None,
    first: Callable[[], None] | None = None,
    interrupt: Translate | None = None,
    report_failed: bool = False,
    asynchronous: bool | None = None,
    deliver: Deliver | None = None,
    again: Again | None = None,
    join: Join | None = None,
) -> Wrapper:
    """A wrapt wrapper for one model call per agent step; see the module docstring.

    ``applies`` (e.g. :func:`in_a_run`) leaves calls it rejects untouched; ``first`` runs
    before the pre-flight check (e.g. raise an interrupt held back in the run); ``before``
    is kept as ``call.before`` for ``read``; ``interrupt`` replaces our interrupt (of the
    pre-flight check and of the report) with the framework's; with ``report_failed`` a call
    that raised is reported too (its answer may have been committed), without raising at
    STOP: the caller's exception goes on. ``deliver`` adds a waiting recommendation to the
    request; ``again(call, detector)`` builds the re-ask after a truncated or empty answer
    and ``join(first, second)`` joins a truncated answer with its continuation (see
    :mod:`.recommendations`).
    """
    if deliver is not None:
        can_deliver(package)

    def open_scope(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Scope | None:
        if applies is not None and not applies(instance, args, kwargs):
            return None
        return model_turn_scope(
            read,
            ModelCall(instance, args, kwargs),
            package=package,
            before=before,
            first=first,
            interrupt=interrupt,
            report_failed=report_failed,
            deliver=deliver,
        )

    inner = scoped_wrapper(open_scope, asynchronous=asynchronous)
    if again is None:
        return inner
    return reasking_wrapper(inner, again, join, package, asynchronous)


def reasking_wrapper(
    inner: Wrapper,
    again: Again,
    join: Join | None,
    package: str,
    asynchronous: bool | None = None,
    nested: Callable[[], bool] | None = None,
) -> Wrapper:
    """``inner`` (a wrapt wrapper that makes and reports one model call) made again while
    an answer's report queues a re-ask: a truncation's continuation (the answers joined by
    ``join``) or a premature end's re-prompt (the new answer). What
    :func:`model_turn_wrapper` does with ``again=``; for a package whose model-call
    wrapper is a scope of its own, and whose ``deliver`` runs one level below (in the
    request the framework builds inside the call). ``nested()`` True: a call inside one an
    outer wrapper makes and re-asks (a gateway's nested call): not asked again here."""

    def follow_up(instance: Any, args: Any, kwargs: Any, result: Any) -> Any:
        guard = get_guard()
        if nested is not None and nested():
            return None, None
        request = reask_request(
            guard, ModelCall(instance, args, kwargs, result=result), again, package
        )
        return request, waiting_detector(guard, package) if request is not None else None

    def joined(first: Any, second: Any, detector: str | None) -> Any:
        return combined_answer(get_guard(), package, join, first, second, detector)

    def wrapper(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if asynchronous if asynchronous is not None else is_async(wrapped):
            return _async(wrapped, instance, args, kwargs)
        result = inner(wrapped, instance, args, kwargs)
        if not get_guard().deliveries.waiting:  # the common case: nothing to re-ask
            return result
        for _ in range(reasks_allowed(get_guard())):
            request, detector = follow_up(instance, args, kwargs, result)
            if request is None:
                break
            result = joined(result, inner(wrapped, instance, *request), detector)
        return result

    async def _async(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        result = await inner(wrapped, instance, args, kwargs)
        if not get_guard().deliveries.waiting:
            return result
        for _ in range(reasks_allowed(get_guard())):
            request, detector = follow_up(instance, args, kwargs, result)
            if request is None:
                break
            result = joined(result, await inner(wrapped, instance, *request), detector)
        return result

    return wrapper


def model_turn_scope(
    read: ReadAnswer,
    call: ModelCall,
    *,
    package: str,
    before: Callable[[ModelCall], Any] | None = None,
    first: Callable[[], None] | None = None,
    interrupt: Translate | None = None,
    report_failed: bool = False,
    deliver: Deliver | None = None,
) -> Scope:
    """What :func:`model_turn_wrapper` runs each call in, for a hook it cannot wrap (an
    async context manager the framework's stream lives in)::

        scope = model_turn_scope(read, ModelCall(instance, args, kwargs), package="...")
        with scope:  # the pre-flight check, the turn open
            call.result = ...  # (or ``scope.inside(result)``)
        scope.after(None)  # the report, unless a layer below made it
    """
    return _Turn(get_guard(), call, read, package, before, first, interrupt, report_failed, deliver)


class _Turn:
    """Pre-flight, the model turn and the report around one call (a
    :class:`~.scoped_call.Scope`)."""

    __slots__ = (
        "_before",
        "_call",
        "_deliver",
        "_first",
        "_guard",
        "_interrupt",
        "_package",
        "_read",
        "_report_failed",
        "_turn",
    )

    def __init__(
        self,
        guard: Any,
        call: ModelCall,
        read: ReadAnswer,
        package: str,
        before: Callable[[ModelCall], Any] | None,
        first: Callable[[], None] | None,
        interrupt: Translate | None,
        report_failed: bool,
        deliver: Deliver | None = None,
    ) -> None:
        self._guard = guard
        self._deliver = deliver
        self._call = call
        self._read = read
        self._package = package
        self._before = before
        self._first = first
        self._interrupt = interrupt
        self._report_failed = report_failed
        self._turn: Any = None

    def __enter__(self) -> Any:
        if self._first is not None:
            self._first()
        try:
            self._guard.preflight_llm()  # raises nothing but LoopGuardInterrupt (enforce, STOP)
        except LoopGuardInterrupt as stop:
            if self._interrupt is None:
                raise
            raise self._interrupt(stop) from None
        if self._deliver is not None and self._guard.deliveries.waiting:
            deliver_waiting(self._guard, self._call, self._deliver, self._package)
        if self._before is not None:
            self._call.before = self._before(self._call)
        self._turn = self._guard.model_turn()  # never raises
        return self._turn

    def request(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The arguments the call is made with: the caller's, or new ones carrying a
        delivered recommendation."""
        return self._call.args, self._call.kwargs

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> Any:
        turn = self._turn
        try:
            if exc is not None and self._report_failed and turn.needs_report:
                self._call.error = exc
                self._report(raise_on_stop=False)
        finally:
            turn.end()

    def inside(self, result: Any) -> Any:
        self._call.result = result
        return result

    def after(self, result: Any) -> Any:
        if self._turn.needs_report:  # in a run, and no layer below reported it
            self._report(raise_on_stop=True)
        return result

    def _report(self, *, raise_on_stop: bool) -> None:
        report_turn(
            self._guard,
            self._package,
            self._read,
            self._call,
            raise_on_stop=raise_on_stop,
            interrupt=self._interrupt,
        )
