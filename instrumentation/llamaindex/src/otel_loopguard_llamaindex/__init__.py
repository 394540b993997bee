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

from otel_loopguard.kit.instrumentor import FrameworkInstrumentor, Hook, hooks_of
from otel_loopguard_llamaindex.model_turns import agent_step_wrapper, request_wrapper
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
_AGENT_CLASSES = ((_BASE_AGENT, "BaseWorkflowAgent"), (_MULTI_AGENT, "AgentWorkflow"))
#: the agents that ask their LLM through ``_get_response`` / ``_get_streaming_response``
_REQUESTING_AGENTS = (
    ("llama_index.core.agent.workflow.function_agent", "FunctionAgent"),
    ("llama_index.core.agent.workflow.react_agent", "ReActAgent"),
    ("llama_index.core.agent.workflow.codeact_agent", "CodeActAgent"),
)

__all__ = ["LlamaIndexInstrumentor", "LoopGuardWorkflowInterrupt", "__version__"]

_CALL_TOOL = call_tool_wrapper()
_CALL_TOOL_STEP = call_tool_step_wrapper()
_AGENT_STEP = agent_step_wrapper()
_REQUEST = request_wrapper(0)
_STREAMED_REQUEST = request_wrapper(1)


class LlamaIndexInstrumentor(FrameworkInstrumentor):
    """Tool spans, agent run spans, model turns and loop enforcement for LlamaIndex."""

    instruments = _instruments
    version = __version__
    schema_url = "https://opentelemetry.io/schemas/1.37.0"
    hooks = (
        *hooks_of(_FUNCTION_TOOL, "FunctionTool", ("call", "acall"), make=tool_wrapper),
        *(
            hook
            for module, cls in _AGENT_CLASSES
            for hook in (
                Hook(module, f"{cls}._call_tool", _CALL_TOOL),
                Hook(module, f"{cls}.call_tool", _CALL_TOOL_STEP),
                Hook(module, f"{cls}.run", make=run_wrapper),
                Hook(module, f"{cls}.run_agent_step", _AGENT_STEP),
            )
        ),
        # the LLM's message list: a replan's recommendation goes into it
        *(
            hook
            for module, cls in _REQUESTING_AGENTS
            for hook in (
                Hook(module, f"{cls}._get_response", _REQUEST),
                Hook(module, f"{cls}._get_streaming_response", _STREAMED_REQUEST),
            )
        ),
    )
