"""otel-loopguard for LangChain tools and LangGraph runs.

``opentelemetry-instrument`` loads :class:`LangChainInstrumentor` when ``langchain-core`` is
installed. It adds an ``execute_tool {tool}`` span around every tool execution
(``BaseTool.run`` / ``arun``) and an ``invoke_agent {graph}`` span around every outermost
LangGraph run (``Pregel.stream`` / ``astream``, which ``invoke`` / ``ainvoke`` use). Inside a
run, every chat model call (``BaseChatModel._generate_with_cache`` / ``_agenerate_with_cache``,
and the ``stream`` / ``astream`` a caller reads itself) is pre-flight checked and its answer
reported as a model turn (usage, tool calls, finish reason), for token budgets,
``max_steps``, truncation and premature ends. Loop
detection, decisions and enforcement come from :mod:`otel_loopguard.guard`: in
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

from otel_loopguard_langchain.graph import astream_wrapper, stream_wrapper
from otel_loopguard_langchain.model_streams import astream_wrapper as model_astream_wrapper
from otel_loopguard_langchain.model_streams import stream_wrapper as model_stream_wrapper
from otel_loopguard_langchain.model_turns import async_model_wrapper, sync_model_wrapper
from otel_loopguard_langchain.package import _instruments
from otel_loopguard_langchain.tools import async_tool_wrapper, sync_tool_wrapper
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
        wrap_function_wrapper(_TOOLS_MODULE, "BaseTool.run", sync_tool_wrapper(tracer))
        wrap_function_wrapper(_TOOLS_MODULE, "BaseTool.arun", async_tool_wrapper(tracer))
        wrap_function_wrapper(
            _CHAT_MODELS_MODULE, "BaseChatModel._generate_with_cache", sync_model_wrapper
        )
        wrap_function_wrapper(
            _CHAT_MODELS_MODULE, "BaseChatModel._agenerate_with_cache", async_model_wrapper
        )
        wrap_function_wrapper(_CHAT_MODELS_MODULE, "BaseChatModel.stream", model_stream_wrapper)
        wrap_function_wrapper(_CHAT_MODELS_MODULE, "BaseChatModel.astream", model_astream_wrapper)
        self._langgraph = _langgraph_available()
        if self._langgraph:
            wrap_function_wrapper(_PREGEL_MODULE, "Pregel.stream", stream_wrapper(tracer))
            wrap_function_wrapper(_PREGEL_MODULE, "Pregel.astream", astream_wrapper(tracer))

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
