"""The agent run boundary: ``Pregel.stream`` / ``Pregel.astream``.

``invoke`` / ``ainvoke`` are built on ``stream`` / ``astream``, so wrapping the two stream
methods sees every LangGraph run. A subgraph (a compiled graph used as a node, or a
ReAct agent inside a supervisor) re-enters them; only the outermost run of a context makes
the ``invoke_agent`` span, inner graphs only name the agent their tools run for.

The stream is driven one step at a time and the run is made current only while a step
runs, never between two chunks the caller receives: a caller that drops a stream halfway
must not find itself "inside" that run when it starts the next one.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from opentelemetry.trace import Tracer

from otel_loopguard import LoopGuardInterrupt
from otel_loopguard.guard import get_guard
from otel_loopguard_langchain import run_context

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
    """Enter/leave around one step of the inner stream; opens the run on the first step."""

    def __init__(self, tracer: Tracer, agent: str, config: dict[str, Any] | None) -> None:
        self.agent = agent
        self.nested = run_context.run_open() or is_subgraph_call(config)
        self._tracer = tracer
        self._conversation = None if self.nested else conversation_id(config)
        self._run: Any = None
        self._tokens: list[Any] = []
        self._closed = False

    def enter(self) -> None:
        self._tokens = run_context.enter(self.agent, outermost=not self.nested)
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
        run_context.leave(self._tokens)

    def close(self, exc: BaseException | None) -> None:
        """End the run (exactly once); called while entered."""
        if self._closed:
            return
        self._closed = True
        run, self._run = self._run, None
        if run is not None:
            run.__exit__(type(exc) if exc is not None else None, exc, None)

    def check_stopped(self) -> None:
        """Between two chunks: stop consuming a run another span already stopped."""
        if not self.nested:
            get_guard().check_current_run()


def _drive(inner: Iterator[Any], step: _Step) -> Iterator[Any]:
    try:
        while True:
            step.enter()
            try:
                item = next(inner)
                step.check_stopped()
            except StopIteration:
                step.close(None)
                return
            except BaseException as exc:
                _close_inner(inner)
                step.close(exc)
                raise
            finally:
                step.leave()
            yield item
    except GeneratorExit as exc:  # the caller closed the stream early
        step.enter()
        try:
            _close_inner(inner)
            step.close(exc)
        finally:
            step.leave()
        raise


async def _adrive(inner: AsyncIterator[Any], step: _Step) -> AsyncIterator[Any]:
    try:
        while True:
            step.enter()
            try:
                item = await inner.__anext__()
                step.check_stopped()
            except StopAsyncIteration:
                step.close(None)
                return
            except BaseException as exc:
                await _aclose_inner(inner)
                step.close(exc)
                raise
            finally:
                step.leave()
            yield item
    except GeneratorExit as exc:
        step.enter()
        try:
            await _aclose_inner(inner)
            step.close(exc)
        finally:
            step.leave()
        raise


def _close_inner(inner: Any) -> None:
    close = getattr(inner, "close", None)
    if close is not None:
        with contextlib.suppress(Exception, LoopGuardInterrupt):
            close()


async def _aclose_inner(inner: Any) -> None:
    aclose = getattr(inner, "aclose", None)
    if aclose is not None:
        with contextlib.suppress(Exception, LoopGuardInterrupt):
            await aclose()


def stream_wrapper(tracer: Tracer) -> Callable[..., Any]:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: Any, kwargs: Any) -> Any:
        inner = wrapped(*args, **kwargs)
        try:
            step = _Step(tracer, graph_name(instance), _config(args, kwargs))
        except Exception as exc:  # never break the run for our bookkeeping
            get_guard().telemetry.internal_error("langgraph.stream", exc)
            return inner
        return _drive(inner, step)

    return wrapper


def astream_wrapper(tracer: Tracer) -> Callable[..., Any]:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: Any, kwargs: Any) -> Any:
        inner = wrapped(*args, **kwargs)
        try:
            step = _Step(tracer, graph_name(instance), _config(args, kwargs))
        except Exception as exc:
            get_guard().telemetry.internal_error("langgraph.astream", exc)
            return inner
        return _adrive(inner, step)

    return wrapper
