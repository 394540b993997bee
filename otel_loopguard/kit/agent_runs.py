"""The agent-run wrapper: a framework's run method inside ``guard.agent_run(...)``.

The plain case of a run hook (``Agent.execute_task`` / ``aexecute_task``, ``Runner.run``):
the wrapped call, plain or a coroutine (see :mod:`.scoped_call`), is one ``invoke_agent``
span and the run it stands for, ended exactly once with the outcome (completed, the error,
our interrupt, a cancellation). A package writes only how to name the agent (and the
conversation that keys the run, if the framework has one); ``on_result`` may look at the
return value while the run is still open (to set the end state the framework reports
in it). Runs over a stream of events are :mod:`.run_streams`'.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from otel_loopguard.guard.global_guard import get_guard
from otel_loopguard.kit.scoped_call import Scope, Wrapper, scoped_wrapper

#: ``describe(instance, args, kwargs)``: ``(agent name, conversation id)``, or ``None`` to run
#: the call untouched
Describe = Callable[[Any, tuple[Any, ...], dict[str, Any]], "tuple[str | None, str | None] | None"]
#: ``on_result(handle, result)``: with the run still open (``handle`` is its ``RunHandle``)
OnResult = Callable[[Any, Any], None]


def agent_run_wrapper(
    tracer: Any,
    describe: Describe,
    *,
    package: str,
    on_result: OnResult | None = None,
    asynchronous: bool | None = None,
) -> Wrapper:
    """A wrapt wrapper making each call one agent run; see the module docstring. A
    ``describe`` or ``on_result`` that raises is counted as ``<package>.run`` and never
    breaks the call."""

    def open_scope(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Scope | None:
        guard = get_guard()
        try:
            described = describe(instance, args, kwargs)
        except Exception as exc:  # never break the run for our bookkeeping
            guard.telemetry.internal_error(f"{package}.run", exc)
            return None
        if described is None:
            return None
        agent, conversation = described
        return _Run(
            guard, guard.agent_run(tracer, agent, conversation_id=conversation), on_result, package
        )

    return scoped_wrapper(open_scope, asynchronous=asynchronous)


class _Run:
    __slots__ = ("_guard", "_handle", "_on_result", "_package", "_run")

    def __init__(self, guard: Any, run: Any, on_result: OnResult | None, package: str) -> None:
        self._guard = guard
        self._run = run
        self._on_result = on_result
        self._package = package
        self._handle: Any = None

    def __enter__(self) -> Any:
        self._handle = self._run.__enter__()
        return self._handle

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> Any:
        return self._run.__exit__(exc_type, exc, tb)

    def inside(self, result: Any) -> Any:
        if self._on_result is not None:
            try:
                self._on_result(self._handle, result)
            except Exception as exc:  # never let our bookkeeping break the agent
                self._guard.telemetry.internal_error(f"{self._package}.run", exc)
        return result

    def after(self, result: Any) -> Any:
        return result
