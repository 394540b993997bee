"""otel-loopguard for smolagents: tool spans, agent spans, and interrupts that stop the run.

``ToolCallingAgent`` turns a failing tool into an error message for the model and carries
on, and ``CodeAgent`` runs tools inside a Python interpreter that catches ``Exception``;
``LoopGuardInterrupt`` derives from ``BaseException``, so in enforce mode it passes both
and reaches the caller of ``agent.run(...)``.

Usage::

    from otel_loopguard_smolagents import SmolagentsInstrumentor
    SmolagentsInstrumentor().instrument()

or run the program under ``opentelemetry-instrument``.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from opentelemetry import trace
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from opentelemetry.instrumentation.utils import unwrap
from wrapt import wrap_function_wrapper

from otel_loopguard_smolagents.executor import timeout_with_context
from otel_loopguard_smolagents.model_turns import step_stream_wrapper
from otel_loopguard_smolagents.package import _instruments
from otel_loopguard_smolagents.runs import run_stream_wrapper
from otel_loopguard_smolagents.tools import execute_tool_call_wrapper, tool_call_wrapper
from otel_loopguard_smolagents.version import __version__

__all__ = ["SmolagentsInstrumentor", "__version__"]

_STEP_CLASSES = ("ToolCallingAgent", "CodeAgent")


class SmolagentsInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _instrument(self, **kwargs: Any) -> None:
        import smolagents.local_python_executor as executor

        tracer = trace.get_tracer(
            __name__, __version__, tracer_provider=kwargs.get("tracer_provider")
        )
        wrap_function_wrapper(
            "smolagents.agents", "MultiStepAgent._run_stream", run_stream_wrapper(tracer)
        )
        wrap_function_wrapper(
            "smolagents.agents",
            "ToolCallingAgent.execute_tool_call",
            execute_tool_call_wrapper(tracer),
        )
        wrap_function_wrapper("smolagents.tools", "Tool.__call__", tool_call_wrapper(tracer))
        for agent_class in _STEP_CLASSES:
            wrap_function_wrapper(
                "smolagents.agents", f"{agent_class}._step_stream", step_stream_wrapper
            )
        if hasattr(executor, "timeout"):  # newer 1.x run generated code in a worker thread
            wrap_function_wrapper(executor, "timeout", timeout_with_context)

    def _uninstrument(self, **kwargs: Any) -> None:
        import smolagents.agents
        import smolagents.local_python_executor as executor
        import smolagents.tools

        unwrap(smolagents.agents.MultiStepAgent, "_run_stream")
        unwrap(smolagents.agents.ToolCallingAgent, "execute_tool_call")
        unwrap(smolagents.tools.Tool, "__call__")
        for agent_class in _STEP_CLASSES:
            unwrap(getattr(smolagents.agents, agent_class), "_step_stream")
        if hasattr(executor, "timeout"):
            unwrap(executor, "timeout")
