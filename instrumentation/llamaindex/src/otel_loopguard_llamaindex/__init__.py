"""otel-loopguard for LlamaIndex function tools and agent workflows.

``opentelemetry-instrument`` loads :class:`LlamaIndexInstrumentor` when ``llama-index-core``
is installed. It adds an ``execute_tool {tool}`` span around every ``FunctionTool`` call and
an ``invoke_agent {agent}`` span around every ``FunctionAgent`` / ``ReActAgent`` /
``CodeActAgent`` / ``AgentWorkflow`` run, reports ``AgentWorkflow`` handoffs and each agent
turn's model answer (usage, finish reason, requested tool calls: see :mod:`.model_turns`),
and in ``enforce`` mode ends a looping or over-budget run with
:class:`~otel_loopguard.LoopGuardInterrupt` in the caller's ``await handler`` or
``stream_events()`` (see :mod:`.workflow` for how it gets there; the run spans are
:mod:`.runs`').
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from opentelemetry import trace
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor
from opentelemetry.instrumentation.utils import unwrap
from wrapt import wrap_function_wrapper

from otel_loopguard_llamaindex.model_turns import agent_step_wrapper
from otel_loopguard_llamaindex.package import _instruments
from otel_loopguard_llamaindex.runs import run_wrapper
from otel_loopguard_llamaindex.tools import tool_wrapper
from otel_loopguard_llamaindex.version import __version__
from otel_loopguard_llamaindex.workflow import (
    LoopGuardWorkflowInterrupt,
    call_tool_step_wrapper,
    call_tool_wrapper,
)

_FUNCTION_TOOL = "llama_index.core.tools.function_tool"
_BASE_AGENT = "llama_index.core.agent.workflow.base_agent"
_MULTI_AGENT = "llama_index.core.agent.workflow.multi_agent_workflow"

__all__ = ["LlamaIndexInstrumentor", "LoopGuardWorkflowInterrupt", "__version__"]


class LlamaIndexInstrumentor(BaseInstrumentor):
    """Tool spans, agent run spans, model turns and loop enforcement for LlamaIndex."""

    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _instrument(self, **kwargs: Any) -> None:
        tracer = trace.get_tracer(
            __name__,
            __version__,
            tracer_provider=kwargs.get("tracer_provider"),
            schema_url="https://opentelemetry.io/schemas/1.37.0",
        )
        tools = tool_wrapper(tracer)
        wrap_function_wrapper(_FUNCTION_TOOL, "FunctionTool.call", tools)
        wrap_function_wrapper(_FUNCTION_TOOL, "FunctionTool.acall", tools)
        for module, cls in ((_BASE_AGENT, "BaseWorkflowAgent"), (_MULTI_AGENT, "AgentWorkflow")):
            wrap_function_wrapper(module, f"{cls}._call_tool", call_tool_wrapper())
            wrap_function_wrapper(module, f"{cls}.call_tool", call_tool_step_wrapper())
            wrap_function_wrapper(module, f"{cls}.run", run_wrapper(tracer))
            wrap_function_wrapper(module, f"{cls}.run_agent_step", agent_step_wrapper())

    def _uninstrument(self, **kwargs: Any) -> None:
        from llama_index.core.agent.workflow.base_agent import BaseWorkflowAgent
        from llama_index.core.agent.workflow.multi_agent_workflow import AgentWorkflow
        from llama_index.core.tools.function_tool import FunctionTool

        unwrap(FunctionTool, "call")
        unwrap(FunctionTool, "acall")
        for cls in (BaseWorkflowAgent, AgentWorkflow):
            unwrap(cls, "_call_tool")
            unwrap(cls, "call_tool")
            unwrap(cls, "run")
            unwrap(cls, "run_agent_step")
