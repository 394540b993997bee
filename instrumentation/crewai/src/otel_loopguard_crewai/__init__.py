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

from collections.abc import Collection
from typing import Any

from opentelemetry import trace
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from opentelemetry.instrumentation.utils import unwrap
from wrapt import wrap_function_wrapper

from otel_loopguard_crewai.model_turns import llm_response_wrapper
from otel_loopguard_crewai.package import _instruments
from otel_loopguard_crewai.react_path import structured_tool_wrapper, tool_usage_wrapper
from otel_loopguard_crewai.runs import execute_task_wrapper
from otel_loopguard_crewai.streaming import crew_kickoff
from otel_loopguard_crewai.tools import native_tool_call_wrapper
from otel_loopguard_crewai.version import __version__

__all__ = ["CrewAIInstrumentor", "__version__"]

_EXECUTOR_MODULE = "crewai.agents.agent_executor"
# (module, class, methods, the factory of their wrapper: one wrapper for the plain and the
# async method of a pair)
_TARGETS = (
    ("crewai.crew", "Crew", ("kickoff",), lambda tracer: crew_kickoff),
    (
        "crewai.agent.core",
        "Agent",
        # standalone Agent.kickoff / kickoff_async (no crew): where they run the executor
        (
            "execute_task",
            "aexecute_task",
            "_execute_and_build_output",
            "_execute_and_build_output_async",
        ),
        execute_task_wrapper,
    ),
    (
        "crewai.agents.agent_executor",
        "AgentExecutor",
        ("_execute_single_native_tool_call",),
        native_tool_call_wrapper,
    ),
    ("crewai.tools.tool_usage", "ToolUsage", ("use", "ause"), tool_usage_wrapper),
    (
        "crewai.tools.structured_tool",
        "CrewStructuredTool",
        ("invoke", "ainvoke"),
        structured_tool_wrapper,
    ),
)


class CrewAIInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _instrument(self, **kwargs: Any) -> None:
        tracer = trace.get_tracer(
            __name__, __version__, tracer_provider=kwargs.get("tracer_provider")
        )
        for module, cls, methods, make_wrapper in _TARGETS:
            wrapper = make_wrapper(tracer)
            for method in methods:
                wrap_function_wrapper(module, f"{cls}.{method}", wrapper)
        # a module-level function, imported by name into the executor's module
        wrap_function_wrapper(_EXECUTOR_MODULE, "get_llm_response", llm_response_wrapper)

    def _uninstrument(self, **kwargs: Any) -> None:
        import importlib

        for module, cls, methods, _ in _TARGETS:
            for method in methods:
                unwrap(getattr(importlib.import_module(module), cls), method)
        unwrap(importlib.import_module(_EXECUTOR_MODULE), "get_llm_response")
