"""The agent run boundary: ``Pregel.stream`` / ``Pregel.astream``, and which agent runs.

``invoke`` / ``ainvoke`` are built on ``stream`` / ``astream``, so wrapping the two stream
methods sees every LangGraph run. A subgraph (a compiled graph used as a node, or a
ReAct agent inside a supervisor) re-enters them; only the outermost run of a context makes
the ``invoke_agent`` span, inner graphs only name the agent their tools run for.

The stream is driven one step at a time and the run is made current only while a step
runs, never between two chunks the caller receives: a caller that drops a stream halfway
must not find itself "inside" that run when it starts the next one (the kit's
:func:`~otel_loopguard.kit.run_streams.drive` runs the steps, plain or async).

Which LangGraph agent is running in this context is a context variable, because LangGraph
runs nodes in worker threads (sync) or tasks (async) with a copy of the caller's context:
the agent name set around a graph step is seen by every tool that step runs, without
passing anything through LangGraph.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable
from typing import Any

from opentelemetry.trace import Tracer

from otel_loopguard import get_guard
from otel_loopguard.kit.run_streams import drive, is_async_stream

_AGENT: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "otel_loopguard_langchain_agent", default=None
)
# set while the outermost graph run of this context is open: nested graphs make no span
_RUN_OPEN: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "otel_loopguard_langchain_run_open", default=False
)


def current_agent() -> str | None:
    return _AGENT.get()


def run_open() -> bool:
    return _RUN_OPEN.get()


def enter_agent(agent: str, *, outermost: bool) -> list[contextvars.Token]:  # type: ignore[type-arg]
    tokens: list[contextvars.Token] = [_AGENT.set(agent)]  # type: ignore[type-arg]
    if outermost:
        tokens.append(_RUN_OPEN.set(True))
    return tokens


def leave_agent(tokens: list[contextvars.Token]) -> None:  # type: ignore[type-arg]
    for token in reversed(tokens):
        # ValueError: a generator finished in another context (closed by the GC)
        with contextlib.suppress(ValueError):
            token.var.reset(token)


_CONFIGURABLE = "configurable"
# LangGraph's config key for the task a subgraph runs in (langgraph._internal._constants)
_TASK_ID_KEY = "__pregel_task_id"


def graph_name(graph: Any) -> str:
    name = getattr(graph, "name", None)
    return str(name) if name else type(graph).__name__


def _config(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    config = kwargs.get("config")
    if config is None and len(args) > 1:
        config = args[1]
    return config if isinstance(config, dict) else None


def conversation_id(config: dict[str, Any] | None) -> str | None:
    """LangGraph's ``thread_id``: a checkpointed conversation keeps its loop counters."""
    configurable = (config or {}).get(_CONFIGURABLE)
    if isinstance(configurable, dict):
        thread = configurable.get("thread_id")
        if thread is not None and thread != "":
            return str(thread)
    return None


def is_subgraph_call(config: dict[str, Any] | None) -> bool:
    configurable = (config or {}).get(_CONFIGURABLE)
    return isinstance(configurable, dict) and _TASK_ID_KEY in configurable


class _Step:
    """The kit's :class:`~otel_loopguard.kit.run_streams.Steps` of one graph run: the agent
    named around each step, the run opened at the first step (outermost runs only), a run
    another span stopped stops being consumed between two chunks."""

    def __init__(self, tracer: Tracer, agent: str, config: dict[str, Any] | None) -> None:
        self.agent = agent
        self.nested = run_open() or is_subgraph_call(config)
        self._tracer = tracer
        self._conversation = None if self.nested else conversation_id(config)
        self._run: Any = None
        self._tokens: list[Any] = []
        self._closed = False

    def enter(self) -> None:
        self._tokens = enter_agent(self.agent, outermost=not self.nested)
        if self.nested:
            return
        if self._run is None:
            self._run = get_guard().agent_run(
                self._tracer, self.agent, conversation_id=self._conversation
            )
            self._run.__enter__()
        else:
            self._run.resume()

    def leave(self) -> None:
        if self._run is not None and not self._closed:
            self._run.suspend()
        leave_agent(self._tokens)

    def step(self, item: Any) -> None:
        """Between two chunks: stop consuming a run another span already stopped."""
        if not self.nested:
            get_guard().check_current_run()

    def end(self, exc: BaseException | None) -> None:
        """End the run (exactly once); called while entered."""
        if self._closed:
            return
        self._closed = True
        run, self._run = self._run, None
        if run is not None:
            run.__exit__(type(exc) if exc is not None else None, exc, None)


def stream_wrapper(tracer: Tracer) -> Callable[..., Any]:
    """Wrap ``Pregel.stream`` and ``Pregel.astream`` (a generator, or an async one)."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: Any, kwargs: Any) -> Any:
        inner = wrapped(*args, **kwargs)
        try:
            step = _Step(tracer, graph_name(instance), _config(args, kwargs))
        except Exception as exc:  # never break the run for our bookkeeping
            where = "astream" if is_async_stream(inner) else "stream"
            get_guard().telemetry.internal_error(f"langgraph.{where}", exc)
            return inner
        return drive(inner, step, quiet_close=True)

    return wrapper
