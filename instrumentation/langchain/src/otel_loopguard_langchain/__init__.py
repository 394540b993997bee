"""otel-loopguard for LangChain tools and LangGraph runs.

``opentelemetry-instrument`` loads :class:`LangChainInstrumentor` when ``langchain-core`` is
installed. It adds an ``execute_tool {tool}`` span around every tool execution
(``BaseTool.run`` / ``arun``) and an ``invoke_agent {graph}`` span around every outermost
LangGraph run (``Pregel.stream`` / ``astream``, which ``invoke`` / ``ainvoke`` use). Inside a
run, every chat model call (``BaseChatModel._generate_with_cache`` / ``_agenerate_with_cache``,
and the ``stream`` / ``astream`` a caller reads itself) is pre-flight checked and its answer
reported as a model turn (usage, tool calls, finish reason), for token budgets,
``max_steps``, truncation and premature ends. Loop
detection, decisions and enforcement come from otel-loopguard's guard: in
``enforce`` mode a looping run ends with :class:`~otel_loopguard.LoopGuardInterrupt` in the
caller's ``invoke`` / ``stream`` and no tool runs after the STOP.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Collection
from typing import Any

from opentelemetry import trace
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor
from opentelemetry.instrumentation.utils import unwrap
from wrapt import wrap_function_wrapper

from otel_loopguard_langchain.model_streams import stream_wrapper as model_stream_wrapper
from otel_loopguard_langchain.model_turns import model_wrapper
from otel_loopguard_langchain.package import _instruments
from otel_loopguard_langchain.runs import stream_wrapper
from otel_loopguard_langchain.tools import tool_wrapper
from otel_loopguard_langchain.version import __version__

_TOOLS_MODULE = "langchain_core.tools.base"
_CHAT_MODELS_MODULE = "langchain_core.language_models.chat_models"
_PREGEL_MODULE = "langgraph.pregel.main"

__all__ = ["LangChainInstrumentor", "__version__"]


class LangChainInstrumentor(BaseInstrumentor):
    """Tool spans, model turns and loop enforcement for LangChain; run spans for LangGraph."""

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
        wrap_function_wrapper(_TOOLS_MODULE, "BaseTool.run", tools)
        wrap_function_wrapper(_TOOLS_MODULE, "BaseTool.arun", tools)
        for method in ("_generate_with_cache", "_agenerate_with_cache"):
            wrap_function_wrapper(_CHAT_MODELS_MODULE, f"BaseChatModel.{method}", model_wrapper)
        for method in ("stream", "astream"):
            wrap_function_wrapper(
                _CHAT_MODELS_MODULE, f"BaseChatModel.{method}", model_stream_wrapper
            )
        self._langgraph = _langgraph_available()
        if self._langgraph:
            graph_runs = stream_wrapper(tracer)
            wrap_function_wrapper(_PREGEL_MODULE, "Pregel.stream", graph_runs)
            wrap_function_wrapper(_PREGEL_MODULE, "Pregel.astream", graph_runs)

    def _uninstrument(self, **kwargs: Any) -> None:
        from langchain_core.language_models.chat_models import BaseChatModel
        from langchain_core.tools.base import BaseTool

        unwrap(BaseTool, "run")
        unwrap(BaseTool, "arun")
        unwrap(BaseChatModel, "_generate_with_cache")
        unwrap(BaseChatModel, "_agenerate_with_cache")
        unwrap(BaseChatModel, "stream")
        unwrap(BaseChatModel, "astream")
        if getattr(self, "_langgraph", False):
            from langgraph.pregel.main import Pregel

            unwrap(Pregel, "stream")
            unwrap(Pregel, "astream")


def _langgraph_available() -> bool:
    try:
        return importlib.util.find_spec(_PREGEL_MODULE) is not None
    except (ImportError, ValueError):
        return False
