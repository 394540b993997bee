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

from importlib import import_module

from otel_loopguard.kit.instrumentor import FrameworkInstrumentor, Hook
from otel_loopguard_smolagents.executor import timeout_with_context
from otel_loopguard_smolagents.foreign_runs import run_wrapper
from otel_loopguard_smolagents.model_turns import memory_messages_wrapper, step_stream_wrapper
from otel_loopguard_smolagents.package import _instruments
from otel_loopguard_smolagents.runs import run_stream_wrapper
from otel_loopguard_smolagents.tools import execute_tool_call_wrapper, tool_call_wrapper
from otel_loopguard_smolagents.version import __version__

__all__ = ["SmolagentsInstrumentor", "__version__"]

_AGENTS = "smolagents.agents"
_EXECUTOR = "smolagents.local_python_executor"


def _executor_has_timeout() -> bool:
    """Newer 1.x run generated code in a worker thread (``timeout``)."""
    return hasattr(import_module(_EXECUTOR), "timeout")


class SmolagentsInstrumentor(FrameworkInstrumentor):
    instruments = _instruments
    version = __version__
    hooks = (
        Hook(_AGENTS, "MultiStepAgent._run_stream", make=run_stream_wrapper),
        # another instrumentation's run span left consistent after our interrupt
        Hook(_AGENTS, "MultiStepAgent.run", run_wrapper),
        Hook(_AGENTS, "ToolCallingAgent.execute_tool_call", make=execute_tool_call_wrapper),
        Hook("smolagents.tools", "Tool.__call__", make=tool_call_wrapper),
        *(
            Hook(_AGENTS, f"{agent_class}._step_stream", step_stream_wrapper)
            for agent_class in ("ToolCallingAgent", "CodeAgent")
        ),
        # the step's request: a replan's recommendation goes into it
        Hook(_AGENTS, "MultiStepAgent.write_memory_to_messages", make=memory_messages_wrapper),
        Hook(_EXECUTOR, "timeout", timeout_with_context, when=_executor_has_timeout),
    )
