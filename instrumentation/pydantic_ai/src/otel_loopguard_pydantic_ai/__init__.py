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

from otel_loopguard.kit.instrumentor import FrameworkInstrumentor, Hook
from otel_loopguard_pydantic_ai.model_turns import request_wrapper, stream_wrapper
from otel_loopguard_pydantic_ai.package import _instruments
from otel_loopguard_pydantic_ai.recommendations import model_request_wrapper
from otel_loopguard_pydantic_ai.runs import iter_wrapper
from otel_loopguard_pydantic_ai.tools import tool_wrapper
from otel_loopguard_pydantic_ai.version import __version__

__all__ = ["PydanticAIInstrumentor", "__version__"]

_GRAPH = "pydantic_ai._agent_graph"


class PydanticAIInstrumentor(FrameworkInstrumentor):
    """Adds loop detection and enforcement to pydantic-ai agent runs."""

    instruments = _instruments
    version = __version__
    hooks = (
        Hook("pydantic_ai.agent", "Agent.iter", make=iter_wrapper),
        Hook("pydantic_ai.tool_manager", "ToolManager.execute_tool_call", make=tool_wrapper),
        Hook(_GRAPH, "ModelRequestNode.run", request_wrapper),
        Hook(_GRAPH, "ModelRequestNode.stream", stream_wrapper),
        # where a delivered recommendation goes into the messages sent (.recommendations)
        Hook(_GRAPH, "model_request", model_request_wrapper),
        Hook(_GRAPH, "model_request_stream", model_request_wrapper),
    )
