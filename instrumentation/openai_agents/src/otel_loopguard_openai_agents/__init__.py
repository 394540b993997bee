"""otel-loopguard instrumentation for the OpenAI Agents SDK (``openai-agents``).

Every function-tool execution becomes an ``execute_tool {tool}`` span and every
``Runner.run`` / ``Runner.run_streamed`` an ``invoke_agent {agent}`` span; handoffs
(``transfer_to_<agent>``) are reported as handoff events, and every model turn as a model
response (usage, requested function tools, empty, truncated) for budgets, max steps,
truncation and premature ends. In ``enforce`` mode a STOP decision raises
:class:`otel_loopguard.LoopGuardInterrupt` out of the run.

Why these hook points (openai-agents 0.24):

* ``FunctionTool.on_invoke_tool`` is a per-instance field, so wrapping the class would miss
  every tool. The runner calls ``_invoke_function_tool_with_metadata`` in
  ``agents.run_internal.tool_execution`` for every function tool instead; it also tells an
  SDK-generated error text (the tool body raised) from a real result.
* A tool body's exception becomes a text for the model in the tool's own failure handler,
  which calls ``agents.tool.maybe_invoke_function_tool_failure_error_function`` with the
  exception: we keep it there and report the call as that error.
* Errors raised by the runner's hook are re-raised as ``UserError`` unless they are
  ``AgentsException``; ``LoopGuardInterrupt`` derives from ``BaseException``, passes the runner's
  ``except Exception`` untouched and wins its failure arbitration, so the caller of the run
  receives it as is.
* The runner calls every ``Model`` (the SDK's, LiteLLM, a user's own) through
  ``get_response_with_retry`` / ``stream_response_with_retry`` and passes the
  ``ModelResponse`` to ``get_single_step_result_from_response``, which runs the turn's tools;
  ``run_single_turn`` and ``run_single_turn_streamed`` look all three up in
  ``agents.run_internal.run_loop``, so wrapping them there sees each turn of plain and
  streamed runs once, before its tools run (see :mod:`.model_turns`).
* Both turn functions build the model's input with ``maybe_filter_model_input`` (looked up
  in ``run_loop`` too): in ``enforce`` mode a replan's recommendation is added to the input
  it returns (see :mod:`.recommendations`).
* ``run_streamed`` returns at once and runs the agent in a background task that awaits
  ``agents.run.start_streaming``: the agent span is opened inside that task so it ends
  when the run really ends (also when the consumer stops early or cancels).
"""

from __future__ import annotations

from otel_loopguard.kit.instrumentor import FrameworkInstrumentor, Hook, hooks_of
from otel_loopguard_openai_agents.model_turns import model_call_wrapper, turn_wrapper
from otel_loopguard_openai_agents.package import _instruments
from otel_loopguard_openai_agents.recommendations import make_filter_wrapper
from otel_loopguard_openai_agents.runs import run_wrapper, streaming_wrapper
from otel_loopguard_openai_agents.tools import failure_wrapper, handoff_wrapper, tool_wrapper
from otel_loopguard_openai_agents.version import __version__

__all__ = ["OpenAIAgentsInstrumentor", "__version__"]

_RUN_MODULE = "agents.run"
_LOOP_MODULE = "agents.run_internal.run_loop"
_TOOL_MODULE = "agents.run_internal.tool_execution"
_TURN_MODULE = "agents.run_internal.turn_resolution"


class OpenAIAgentsInstrumentor(FrameworkInstrumentor):
    """Adds loop detection and enforcement to OpenAI Agents SDK runs."""

    instruments = _instruments
    version = __version__
    hooks = (
        Hook(_RUN_MODULE, "AgentRunner.run", make=run_wrapper),
        Hook(_RUN_MODULE, "start_streaming", make=streaming_wrapper),
        Hook(_TOOL_MODULE, "_invoke_function_tool_with_metadata", make=tool_wrapper),
        Hook("agents.tool", "maybe_invoke_function_tool_failure_error_function", failure_wrapper),
        Hook(_TURN_MODULE, "execute_handoffs", make=handoff_wrapper),
        *hooks_of(
            _LOOP_MODULE,
            "",
            ("get_response_with_retry", "stream_response_with_retry"),
            wrapper=model_call_wrapper,
        ),
        Hook(_LOOP_MODULE, "get_single_step_result_from_response", turn_wrapper),
        # a replan's recommendation goes into the next model call's input (.recommendations)
        Hook(_LOOP_MODULE, "maybe_filter_model_input", make=make_filter_wrapper),
    )
