"""otel-loopguard instrumentation for AutoGen AgentChat (``autogen-agentchat`` 0.7).

Every run of an agent or a team (``run`` / ``run_stream``) becomes an ``invoke_agent
{name}`` span, every tool call of an ``AssistantAgent`` goes through the tool gate
(``execute_tool {tool}``), every handoff (``Swarm``) is reported for the handoff-cycle
detector and every model turn of an ``AssistantAgent`` (usage, finish reason, requested
function calls) for budgets and max steps. In ``enforce`` mode a STOP decision raises
:class:`otel_loopguard.LoopGuardInterrupt` out of ``run`` / ``run_stream``.

Why these hook points (autogen-agentchat 0.7.5):

* ``BaseChatAgent.run`` and ``BaseChatAgent.run_stream``: an agent's two entry points (``run``
  does not call ``run_stream``); ``BaseGroupChat.run_stream``: every team (round robin,
  selector, swarm, graph, Magentic-One), whose ``run`` drains it. See :mod:`.runs`, also for
  how an interrupt leaves a team's runtime, which only reports ``Exception`` back.
* ``AssistantAgent._execute_tool_call``: each tool call once, with its call id; and
  ``AssistantAgent._check_and_handle_handoff``: after each batch of tool calls, the handoff
  that really happens. See :mod:`.tools` for why a vetoed call must not raise there.
* ``AssistantAgent._call_llm``: every model call of the agent's step and tool loop, whatever
  the client class; ``AssistantAgent._reflect_on_tool_use_flow``: the extra call of
  ``reflect_on_tool_use=True``. See :mod:`.model_turns`.

Usage::

    from otel_loopguard_autogen import AutoGenInstrumentor
    AutoGenInstrumentor().instrument()

or run the program under ``opentelemetry-instrument``.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from opentelemetry import trace
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from wrapt import FunctionWrapper, wrap_function_wrapper

from otel_loopguard.kit.recommendations import can_deliver
from otel_loopguard_autogen.model_turns import call_llm_wrapper, reflection_wrapper
from otel_loopguard_autogen.package import _instruments
from otel_loopguard_autogen.runs import LoopGuardTeamInterrupt, agent_run_wrapper, stream_wrapper
from otel_loopguard_autogen.tools import handoff_wrapper, tool_wrapper
from otel_loopguard_autogen.version import __version__

__all__ = ["AutoGenInstrumentor", "LoopGuardTeamInterrupt", "__version__"]

_AGENT_MODULE = "autogen_agentchat.agents._base_chat_agent"
_ASSISTANT_MODULE = "autogen_agentchat.agents._assistant_agent"
_TEAM_MODULE = "autogen_agentchat.teams._group_chat._base_group_chat"


class AutoGenInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Adds loop detection and enforcement to AutoGen AgentChat agents and teams."""

    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _instrument(self, **kwargs: Any) -> None:
        tracer = trace.get_tracer(
            __name__, __version__, tracer_provider=kwargs.get("tracer_provider")
        )
        wrap_function_wrapper(_AGENT_MODULE, "BaseChatAgent.run", agent_run_wrapper(tracer))
        wrap_function_wrapper(
            _AGENT_MODULE, "BaseChatAgent.run_stream", stream_wrapper(tracer, team=False)
        )
        wrap_function_wrapper(
            _TEAM_MODULE, "BaseGroupChat.run_stream", stream_wrapper(tracer, team=True)
        )
        wrap_function_wrapper(
            _ASSISTANT_MODULE, "AssistantAgent._execute_tool_call", tool_wrapper(tracer)
        )
        wrap_function_wrapper(
            _ASSISTANT_MODULE, "AssistantAgent._check_and_handle_handoff", handoff_wrapper
        )
        wrap_function_wrapper(_ASSISTANT_MODULE, "AssistantAgent._call_llm", call_llm_wrapper)
        can_deliver("autogen")  # the model calls carry a replan's recommendation
        wrap_function_wrapper(
            _ASSISTANT_MODULE, "AssistantAgent._reflect_on_tool_use_flow", reflection_wrapper
        )

    def _uninstrument(self, **kwargs: Any) -> None:
        from autogen_agentchat.agents._assistant_agent import AssistantAgent
        from autogen_agentchat.agents._base_chat_agent import BaseChatAgent
        from autogen_agentchat.teams._group_chat._base_group_chat import BaseGroupChat

        _unwrap(BaseChatAgent, "run")
        _unwrap(BaseChatAgent, "run_stream")
        _unwrap(BaseGroupChat, "run_stream")
        for name in (
            "_execute_tool_call",
            "_check_and_handle_handoff",
            "_call_llm",
            "_reflect_on_tool_use_flow",
        ):
            _unwrap(AssistantAgent, name)


def _unwrap(owner: type, name: str) -> None:
    """Put back what the class itself held: ``opentelemetry``'s ``unwrap`` reads the
    attribute through the descriptor, which would turn a static or class method into a
    plain or bound function."""
    wrapper = owner.__dict__.get(name)
    if isinstance(wrapper, FunctionWrapper):
        setattr(owner, name, wrapper.__wrapped__)
