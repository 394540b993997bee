"""otel-loopguard for CrewAI: agent and tool spans, loop detection, interrupts.

Usage::

    from otel_loopguard_crewai import CrewAIInstrumentor
    CrewAIInstrumentor().instrument()

or run the program under ``opentelemetry-instrument``. CrewAI's own telemetry uses private
tracer providers and leaves the global one (ours) alone.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from opentelemetry import trace
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from opentelemetry.instrumentation.utils import unwrap
from wrapt import wrap_function_wrapper

from otel_loopguard_crewai.package import _instruments
from otel_loopguard_crewai.wrappers import CrewAIWrappers

__version__ = "0.1.0"
__all__ = ["CrewAIInstrumentor"]

_EXECUTOR_MODULE = "crewai.agents.agent_executor"
# (module, class, method, CrewAIWrappers attribute)
_TARGETS = (
    ("crewai.crew", "Crew", "kickoff", "crew_kickoff"),
    ("crewai.agent.core", "Agent", "execute_task", "execute_task"),
    ("crewai.agent.core", "Agent", "aexecute_task", "aexecute_task"),
    # standalone Agent.kickoff / kickoff_async (no crew): where they run the executor
    ("crewai.agent.core", "Agent", "_execute_and_build_output", "execute_task"),
    ("crewai.agent.core", "Agent", "_execute_and_build_output_async", "aexecute_task"),
    (
        "crewai.agents.agent_executor",
        "AgentExecutor",
        "_execute_single_native_tool_call",
        "native_tool_call",
    ),
    ("crewai.tools.tool_usage", "ToolUsage", "use", "tool_usage_use"),
    ("crewai.tools.tool_usage", "ToolUsage", "ause", "tool_usage_ause"),
    ("crewai.tools.structured_tool", "CrewStructuredTool", "invoke", "structured_tool_invoke"),
    ("crewai.tools.structured_tool", "CrewStructuredTool", "ainvoke", "structured_tool_ainvoke"),
)


def _default_guard() -> Any:
    from otel_loopguard.guard import get_guard

    return get_guard()


class CrewAIInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _instrument(self, **kwargs: Any) -> None:
        tracer = trace.get_tracer(
            __name__, __version__, tracer_provider=kwargs.get("tracer_provider")
        )
        wrappers = CrewAIWrappers(tracer, _default_guard)
        for module, cls, method, handler in _TARGETS:
            wrap_function_wrapper(module, f"{cls}.{method}", getattr(wrappers, handler))
        # a module-level function, imported by name into the executor's module
        wrap_function_wrapper(_EXECUTOR_MODULE, "get_llm_response", wrappers.llm_response)

    def _uninstrument(self, **kwargs: Any) -> None:
        import importlib

        for module, cls, method, _ in _TARGETS:
            unwrap(getattr(importlib.import_module(module), cls), method)
        unwrap(importlib.import_module(_EXECUTOR_MODULE), "get_llm_response")
