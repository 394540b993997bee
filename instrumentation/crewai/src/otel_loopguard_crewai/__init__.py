"""otel-loopguard for CrewAI: agent and tool spans, loop detection, interrupts.

Usage::

    from otel_loopguard_crewai import CrewAIInstrumentor
    CrewAIInstrumentor().instrument()

or run the program under ``opentelemetry-instrument``. CrewAI's own telemetry uses private
tracer providers and leaves the global one (ours) alone.

Where the hooks sit (crewai 1.x, ``AgentExecutor``): agent runs :mod:`.runs`, the native
function-calling tool path :mod:`.tools`, the ReAct text path :mod:`.react_path`, model
calls :mod:`.model_turns`, streamed crews :mod:`.streaming`.

``LoopGuardInterrupt`` is a ``BaseException``: the retries, the tool-error handling and the
Flow listeners of the executor catch ``Exception`` only, so it reaches ``crew.kickoff()``.
"""

from __future__ import annotations

from otel_loopguard.kit.instrumentor import FrameworkInstrumentor, Hook, hooks_of
from otel_loopguard_crewai.model_turns import llm_response_wrapper
from otel_loopguard_crewai.package import _instruments
from otel_loopguard_crewai.react_path import structured_tool_wrapper, tool_usage_wrapper
from otel_loopguard_crewai.runs import execute_task_wrapper
from otel_loopguard_crewai.streaming import crew_kickoff
from otel_loopguard_crewai.tools import native_tool_call_wrapper
from otel_loopguard_crewai.version import __version__

__all__ = ["CrewAIInstrumentor", "__version__"]

_AGENT = "crewai.agent.core"
_EXECUTOR_MODULE = "crewai.agents.agent_executor"


class CrewAIInstrumentor(FrameworkInstrumentor):
    instruments = _instruments
    version = __version__
    hooks = (
        Hook("crewai.crew", "Crew.kickoff", crew_kickoff),
        *hooks_of(
            _AGENT,
            "Agent",
            # standalone Agent.kickoff / kickoff_async (no crew): where they run the executor
            (
                "execute_task",
                "aexecute_task",
                "_execute_and_build_output",
                "_execute_and_build_output_async",
            ),
            make=execute_task_wrapper,
        ),
        Hook(
            _EXECUTOR_MODULE,
            "AgentExecutor._execute_single_native_tool_call",
            make=native_tool_call_wrapper,
        ),
        *hooks_of("crewai.tools.tool_usage", "ToolUsage", ("use", "ause"), make=tool_usage_wrapper),
        *hooks_of(
            "crewai.tools.structured_tool",
            "CrewStructuredTool",
            ("invoke", "ainvoke"),
            make=structured_tool_wrapper,
        ),
        # a module-level function, imported by name into the executor's module
        Hook(_EXECUTOR_MODULE, "get_llm_response", llm_response_wrapper),
    )
