"""otel-loopguard instrumentation for pydantic-ai.

Every tool execution becomes an ``execute_tool {tool}`` span and every agent run
(``run``, ``run_sync``, ``run_stream``, ``run_stream_events``, ``iter``: they all go
through ``Agent.iter``) an ``invoke_agent {agent}`` span. Every model request of a run is
a model turn (usage, finish reason, requested tool calls: see :mod:`.model_turns`), so
token and cost budgets, ``max_steps``, truncation and premature ends apply. In ``enforce``
mode a STOP decision raises :class:`otel_loopguard.LoopGuardInterrupt` out of the run.

Why these hook points (pydantic-ai 2.68):

* ``ToolManager.execute_tool_call`` runs every validated function-tool call, around the
  capability hooks (so around pydantic-ai's own tool span when it makes one). Plain
  exceptions propagate from it, and ``LoopGuardInterrupt`` (a ``BaseException``) passes
  pydantic-ai's ``except Exception`` recovery untouched.
* ``ModelRequestNode.run`` / ``.stream`` of the agent graph make every model request of a
  run, streamed or not, whatever the ``Model`` class: see :mod:`.model_turns`.
* With pydantic-ai's own instrumentation on (``Agent(instrument=True)``,
  ``Agent.instrument_all()``, the ``Instrumentation`` capability, or an ``InstrumentedModel``
  as the run's model) pydantic-ai already emits ``invoke_agent``, ``chat`` and
  ``execute_tool`` spans. We then make none: the span processor maps theirs to events, and
  this package only enforces: a pre-call veto before each tool call and model request, and
  a raise right after a tool call when the call's own span produced a STOP.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from opentelemetry import trace
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor
from opentelemetry.instrumentation.utils import unwrap
from wrapt import wrap_function_wrapper

from otel_loopguard_pydantic_ai.model_turns import request_wrapper, stream_wrapper
from otel_loopguard_pydantic_ai.package import _instruments
from otel_loopguard_pydantic_ai.runs import iter_wrapper
from otel_loopguard_pydantic_ai.tools import tool_wrapper
from otel_loopguard_pydantic_ai.version import __version__

__all__ = ["PydanticAIInstrumentor", "__version__"]


class PydanticAIInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Adds loop detection and enforcement to pydantic-ai agent runs."""

    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _instrument(self, **kwargs: Any) -> None:
        tracer = trace.get_tracer(
            __name__, __version__, tracer_provider=kwargs.get("tracer_provider")
        )
        wrap_function_wrapper("pydantic_ai.agent", "Agent.iter", iter_wrapper(tracer))
        wrap_function_wrapper(
            "pydantic_ai.tool_manager", "ToolManager.execute_tool_call", tool_wrapper(tracer)
        )
        wrap_function_wrapper("pydantic_ai._agent_graph", "ModelRequestNode.run", request_wrapper)
        wrap_function_wrapper("pydantic_ai._agent_graph", "ModelRequestNode.stream", stream_wrapper)

    def _uninstrument(self, **kwargs: Any) -> None:
        from pydantic_ai._agent_graph import ModelRequestNode
        from pydantic_ai.agent import Agent
        from pydantic_ai.tool_manager import ToolManager

        unwrap(Agent, "iter")
        unwrap(ToolManager, "execute_tool_call")
        unwrap(ModelRequestNode, "run")
        unwrap(ModelRequestNode, "stream")
