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
caller's ``invoke`` / ``stream`` and no tool runs after the STOP, and a replan's
recommendation is delivered to the run's next chat model call as a ``HumanMessage``
(:mod:`otel_loopguard_langchain.model_turns`).
"""

from __future__ import annotations

import importlib.util

from otel_loopguard.kit.instrumentor import FrameworkInstrumentor, hooks_of
from otel_loopguard_langchain.model_streams import stream_wrapper as model_stream_wrapper
from otel_loopguard_langchain.model_turns import agenerate_wrapper, amodel_wrapper, model_wrapper
from otel_loopguard_langchain.package import _instruments
from otel_loopguard_langchain.runs import stream_wrapper
from otel_loopguard_langchain.tools import tool_wrapper
from otel_loopguard_langchain.version import __version__

_TOOLS_MODULE = "langchain_core.tools.base"
_CHAT_MODELS_MODULE = "langchain_core.language_models.chat_models"
_PREGEL_MODULE = "langgraph.pregel.main"

__all__ = ["LangChainInstrumentor", "__version__"]


def _langgraph_available() -> bool:
    try:
        return importlib.util.find_spec(_PREGEL_MODULE) is not None
    except (ImportError, ValueError):
        return False


class LangChainInstrumentor(FrameworkInstrumentor):
    """Tool spans, model turns and loop enforcement for LangChain; run spans for LangGraph
    (when it is installed: tools work without it)."""

    instruments = _instruments
    version = __version__
    schema_url = "https://opentelemetry.io/schemas/1.37.0"
    hooks = (
        *hooks_of(_TOOLS_MODULE, "BaseTool", ("run", "arun"), make=tool_wrapper),
        *hooks_of(
            _CHAT_MODELS_MODULE,
            "BaseChatModel",
            ("_generate_with_cache",),
            wrapper=model_wrapper,
        ),
        *hooks_of(
            _CHAT_MODELS_MODULE,
            "BaseChatModel",
            ("_agenerate_with_cache",),
            wrapper=amodel_wrapper,
        ),
        *hooks_of(_CHAT_MODELS_MODULE, "BaseChatModel", ("agenerate",), wrapper=agenerate_wrapper),
        *hooks_of(
            _CHAT_MODELS_MODULE,
            "BaseChatModel",
            ("stream", "astream"),
            wrapper=model_stream_wrapper,
        ),
        *hooks_of(
            _PREGEL_MODULE,
            "Pregel",
            ("stream", "astream"),
            make=stream_wrapper,
            when=_langgraph_available,
        ),
    )
