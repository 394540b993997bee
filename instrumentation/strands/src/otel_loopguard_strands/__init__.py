"""otel-loopguard instrumentation for Strands Agents (``strands-agents`` 1.62).

Every agent invocation (``Agent.__call__``, ``invoke_async``, ``stream_async``) becomes an
``invoke_agent {agent name}`` span and one otel-loopguard run (a ``Swarm`` or ``Graph``
invocation, one run for all its agents); every tool use an agent runs goes through the
tool gate (``execute_tool {tool}``), every swarm ``handoff_to_agent`` is reported for the
handoff-cycle detector and every model call (usage, stop reason, requested tool uses) for
budgets and max steps. In ``enforce`` mode a STOP decision raises
:class:`otel_loopguard.LoopGuardInterrupt` out of the invocation.

Why these hook points (strands-agents 1.62):

* ``Agent.stream_async``: the one path of every invocation (``invoke_async`` drains it,
  ``__call__`` runs ``invoke_async``); ``Swarm.stream_async`` and ``Graph.stream_async`` for
  multi-agent runs. See :mod:`.runs`. ``Graph``'s ``_stream_node_to_queue`` and
  ``_execute_nodes_parallel`` to carry our interrupt out of its node tasks. See
  :mod:`.graphs`.
* ``ToolExecutor._stream_with_trace``: each tool use once, whatever the executor, around
  Strands' hooks, tool middleware and ``execute_tool`` span; ``ConcurrentToolExecutor``'s
  ``_task`` and ``_execute`` to carry our interrupt out of its tasks. See :mod:`.tools`.
* ``strands.event_loop.event_loop._make_invoke_model_terminal``: every model call of every
  cycle, whatever the ``Model`` class, around Strands' ``chat`` span. See
  :mod:`.model_turns`.

Not covered: bidirectional streaming agents (``strands.bidi``, ``strands.experimental``),
direct tool calls (``agent.tool.name(...)``), tools run in the background
(``background_tasks``), the deprecated ``Agent.structured_output`` (it calls the model
directly, outside the event loop).

Usage::

    from otel_loopguard_strands import StrandsInstrumentor
    StrandsInstrumentor().instrument()

or run the program under ``opentelemetry-instrument``.
"""

from __future__ import annotations

import inspect
from collections.abc import Collection
from typing import Any

from opentelemetry import trace
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from opentelemetry.instrumentation.utils import unwrap
from wrapt import wrap_function_wrapper

from otel_loopguard_strands.graphs import node_task_wrapper, parallel_nodes_wrapper
from otel_loopguard_strands.model_turns import delivering, invoke_model_terminal_wrapper
from otel_loopguard_strands.package import _instruments
from otel_loopguard_strands.runs import stream_async_wrapper
from otel_loopguard_strands.tools import (
    concurrent_execute_wrapper,
    concurrent_task_wrapper,
    tool_stream_wrapper,
)
from otel_loopguard_strands.version import __version__

__all__ = ["StrandsInstrumentor", "__version__"]

_AGENT_MODULE = "strands.agent.agent"
_SWARM_MODULE = "strands.multiagent.swarm"
_GRAPH_MODULE = "strands.multiagent.graph"
_EVENT_LOOP_MODULE = "strands.event_loop.event_loop"
_EXECUTOR_MODULE = "strands.tools.executors._executor"
_CONCURRENT_MODULE = "strands.tools.executors.concurrent"


class StrandsInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Adds loop detection and enforcement to Strands agents, swarms and graphs."""

    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _instrument(self, **kwargs: Any) -> None:
        tracer = trace.get_tracer(
            __name__, __version__, tracer_provider=kwargs.get("tracer_provider")
        )
        wrap_function_wrapper(
            _AGENT_MODULE, "Agent.stream_async", stream_async_wrapper(tracer, "name")
        )
        wrap_function_wrapper(
            _SWARM_MODULE, "Swarm.stream_async", stream_async_wrapper(tracer, "id")
        )
        wrap_function_wrapper(
            _GRAPH_MODULE, "Graph.stream_async", stream_async_wrapper(tracer, "id")
        )
        wrap_function_wrapper(_GRAPH_MODULE, "Graph._stream_node_to_queue", node_task_wrapper)
        wrap_function_wrapper(
            _GRAPH_MODULE, "Graph._execute_nodes_parallel", parallel_nodes_wrapper
        )
        delivering()
        wrap_function_wrapper(
            _EVENT_LOOP_MODULE, "_make_invoke_model_terminal", invoke_model_terminal_wrapper
        )
        wrap_function_wrapper(
            _EXECUTOR_MODULE, "ToolExecutor._stream_with_trace", tool_stream_wrapper(tracer)
        )
        wrap_function_wrapper(
            _CONCURRENT_MODULE, "ConcurrentToolExecutor._task", concurrent_task_wrapper
        )
        wrap_function_wrapper(
            _CONCURRENT_MODULE, "ConcurrentToolExecutor._execute", concurrent_execute_wrapper
        )

    def _uninstrument(self, **kwargs: Any) -> None:
        from strands.agent.agent import Agent
        from strands.event_loop import event_loop
        from strands.multiagent.graph import Graph
        from strands.multiagent.swarm import Swarm
        from strands.tools.executors._executor import ToolExecutor
        from strands.tools.executors.concurrent import ConcurrentToolExecutor

        unwrap(Agent, "stream_async")
        unwrap(Swarm, "stream_async")
        unwrap(Graph, "stream_async")
        unwrap(Graph, "_stream_node_to_queue")
        unwrap(Graph, "_execute_nodes_parallel")
        unwrap(event_loop, "_make_invoke_model_terminal")
        # a static method: wrapt wrapped the staticmethod object itself, and ``unwrap``
        # (which reads the attribute through the class) would put back the bare function
        wrapper = inspect.getattr_static(ToolExecutor, "_stream_with_trace")
        if isinstance(getattr(wrapper, "__wrapped__", None), staticmethod):
            ToolExecutor._stream_with_trace = wrapper.__wrapped__  # type: ignore[method-assign]
        unwrap(ConcurrentToolExecutor, "_task")
        unwrap(ConcurrentToolExecutor, "_execute")
