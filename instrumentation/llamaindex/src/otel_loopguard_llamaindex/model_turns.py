"""The model side of each agent turn, for budgets, max steps, truncation and premature ends.

Why this hook point (llama-index-core 0.14): every turn of an agent workflow runs in the
``run_agent_step`` step, ``BaseWorkflowAgent.run_agent_step`` for a single agent and
``AgentWorkflow.run_agent_step`` for a multi-agent workflow. Both call the agent's
``take_step``, which asks the model once (``achat_with_tools`` / ``astream_chat_with_tools``
for ``FunctionAgent``, ``achat`` / ``astream_chat`` for ``ReActAgent``, either for
``CodeActAgent``), consumes the stream if the agent streams, and returns an ``AgentOutput``
with the model's message, the tool calls it asked for (already parsed into
``ToolSelection`` objects, whatever the provider or the ReAct text format) and the
response's ``raw`` payload. Wrapping the two steps sees every turn of every agent class,
including a user's own ``BaseWorkflowAgent`` subclass, with any LLM class (a provider's, a
scripted mock); wrapping LLM methods would miss subclasses that override ``achat`` and would
also count model calls a tool makes internally (a query engine tool) as the agent's turns.
A streamed turn is reported once, when ``take_step`` returns with the stream consumed.

- Before the step: the pre-flight check (``LoopGuard.preflight_llm``: a stopped run,
  ``max_steps`` reached, the run's ``timeout`` passed, no token headroom left), so in
  ``enforce`` mode a vetoed model call is never made.
- After it: one ``llm_response`` with the usage and finish reason found in ``raw``, in
  the shape each provider integration leaves there (OpenAI, Mistral and Ollama
  ``usage.prompt_tokens`` / ``completion_tokens``; Anthropic ``usage.input_tokens`` /
  ``output_tokens``; Bedrock Converse ``usage.inputTokens`` / ``outputTokens``; Gemini
  ``usage_metadata.prompt_token_count`` / ``candidates_token_count``; the finish reason
  from ``choices[0]``, ``stop_reason``, ``finish_reason``, ``done_reason`` or
  ``stopReason``), the tool calls and whether the answer was empty; unless a model-call
  instrumentation below (our OpenAI SDK package, for ``llama-index-llms-openai``) already
  reported this turn, which marks the ``LoopGuard.model_turn`` open around the step. A
  STOP (a token budget, max steps) ends the run before the turn's tools run. The
  ``AgentOutput`` event has already been written to the caller's event stream by then
  (the step does that before it returns).

Both interrupts are raised as :class:`~.workflow.LoopGuardWorkflowInterrupt`, which the
workflow runtime hands to ``await handler`` (see :mod:`.workflow`). Not observed: the
model calls outside ``run_agent_step`` (the ``early_stopping_method="generate"`` summary
after ``max_iterations``, structured output generation).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

from otel_loopguard.kit.model_turn import ModelCall, in_a_run, model_turn_wrapper
from otel_loopguard_llamaindex.workflow import _interrupt_for_workflow

_PACKAGE = "llamaindex"  # our errors are counted as llamaindex.model_turn


def agent_step_wrapper() -> Callable[..., Any]:
    """``run_agent_step(ctx, ev: AgentSetup)`` of both agent workflow classes (outside a run
    the guard knows, left alone)."""
    return model_turn_wrapper(
        _read, package=_PACKAGE, applies=in_a_run, interrupt=_interrupt_for_workflow
    )


def _read(call: ModelCall) -> dict[str, Any]:
    return _read_turn(call.instance, call.result)


def _read_turn(instance: Any, output: Any) -> dict[str, Any]:
    """The ``observe_llm_response`` arguments for one ``AgentOutput``."""
    agent_name = getattr(output, "current_agent_name", None)
    agent_name = agent_name if isinstance(agent_name, str) and agent_name else None
    raw = getattr(output, "raw", None)
    input_tokens, output_tokens = _usage(raw)
    calls = getattr(output, "tool_calls", None) or ()
    requested = [(str(call.tool_name), call.tool_kwargs) for call in calls]
    content = getattr(getattr(output, "response", None), "content", None)
    said = isinstance(content, str) and bool(content.strip())
    return {
        "model": _model_name(raw, _llm_of(instance, agent_name)),
        "finish_reason": _finish_reason(raw),
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "empty": not said and not requested,
        "requested_tool_calls": requested,
        "agent_name": agent_name,
    }


def _field(item: Any, name: str) -> Any:
    """A field of a raw payload: a dict (``AgentOutput.raw`` is dumped) or an object."""
    if item is None:
        return None
    if isinstance(item, dict):
        return item.get(name)
    return getattr(item, name, None)


# where each provider integration's ``raw`` carries the usage: (container key, input
# tokens key, output tokens key). OpenAI, Mistral and Ollama (llama-index adds an
# OpenAI-style ``usage`` to Ollama's answer) / Anthropic / Bedrock Converse (also inside a
# streamed ``metadata`` event) / Google GenAI (Gemini).
_USAGE_SHAPES = (
    ("usage", "prompt_tokens", "completion_tokens"),
    ("usage", "input_tokens", "output_tokens"),
    ("usage", "inputTokens", "outputTokens"),
    ("usage_metadata", "prompt_token_count", "candidates_token_count"),
)
# the finish reason at the top of ``raw``: Anthropic, any, Ollama, Bedrock Converse; Gemini's
# candidate (which ``raw`` is) ``finish_reason`` too
_REASON_KEYS = ("stop_reason", "finish_reason", "done_reason", "stopReason")


def _usage(raw: Any) -> tuple[int | None, int | None]:
    """(input, output) tokens of a turn from its ``raw`` payload, in any provider's shape."""
    holders = (raw, _field(raw, "metadata"))  # Bedrock's last streamed event: metadata.usage
    for holder in holders:
        for container, input_key, output_key in _USAGE_SHAPES:
            usage = _field(holder, container)
            if usage is None:
                continue
            input_tokens = _tokens(_field(usage, input_key))
            output_tokens = _tokens(_field(usage, output_key))
            if input_tokens is not None or output_tokens is not None:
                return input_tokens, output_tokens
    return None, None


def _finish_reason(raw: Any) -> str | None:
    """OpenAI-style ``choices[0].finish_reason``, else the first of :data:`_REASON_KEYS`."""
    choices = _field(raw, "choices")
    if isinstance(choices, (list, tuple)) and choices:
        reason = _reason_text(_field(choices[0], "finish_reason"))
        if reason:
            return reason
    for name in _REASON_KEYS:
        reason = _reason_text(_field(raw, name))
        if reason:
            return reason
    return None


def _reason_text(reason: Any) -> str | None:
    """A finish reason as its plain text: SDKs hand enums (Gemini's ``FinishReason``,
    whose ``str()`` would be ``FinishReason.MAX_TOKENS``)."""
    if isinstance(reason, enum.Enum):
        reason = reason.value if isinstance(reason.value, str) else reason.name
    return reason if isinstance(reason, str) and reason else None


def _llm_of(instance: Any, agent_name: str | None) -> Any:
    """The acting agent's LLM: the agent's own, or the multi-agent workflow's current one."""
    agents = getattr(instance, "agents", None)
    if isinstance(agents, dict):
        return getattr(agents.get(agent_name), "llm", None)
    return getattr(instance, "llm", None)


def _model_name(raw: Any, llm: Any) -> str | None:
    """The model that answered (``raw``), else the one the LLM was configured with."""
    for name in (_field(raw, "model"), getattr(llm, "model", None)):
        if isinstance(name, str) and name:
            return name
    try:
        name = llm.metadata.model_name if llm is not None else None
    except Exception:  # an LLM whose metadata needs something we do not have
        return None
    return name if isinstance(name, str) and name and name != "unknown" else None


def _tokens(*values: Any) -> int | None:
    for value in values:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None
