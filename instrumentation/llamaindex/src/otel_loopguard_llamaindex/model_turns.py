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

Recommendations (``enforce`` mode): a replan's message waiting for the run goes into the
message list the agent hands its LLM, by the request methods of the three agent classes
(``_get_response`` / ``_get_streaming_response`` of ``FunctionAgent``, ``ReActAgent``,
``CodeActAgent``: :func:`request_wrapper`), appended to a copy of that list as
``ChatMessage(role="user")``: after the tool results of the run's scratchpad (or the ReAct
observations), which the agent's own ``AgentSetup.input`` does not hold yet. An agent that
ends its turn on an answer cut off at the token limit, or on an empty answer after failing
tools, is asked again at once from ``run_agent_step`` (:func:`agent_step_wrapper`): the
agent's scratchpad already holds that answer, so the same step event is the follow-up
request, and the continuation prompt or re-prompt is delivered into it; the caller gets one
``AgentOutput`` (a truncated answer joined with its continuation, or the new answer).

Both interrupts are raised as :class:`~.workflow.LoopGuardWorkflowInterrupt`, which the
workflow runtime hands to ``await handler`` (see :mod:`.workflow`). Not observed: the
model calls outside ``run_agent_step`` (the ``early_stopping_method="generate"`` summary
after ``max_iterations``, structured output generation).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

from otel_loopguard import get_guard
from otel_loopguard.kit.model_turn import ModelCall, in_a_run, model_turn_wrapper
from otel_loopguard.kit.recommendations import can_deliver, deliver_waiting
from otel_loopguard_llamaindex.workflow import _interrupt_for_workflow

_PACKAGE = "llamaindex"  # our errors are counted as llamaindex.model_turn


#: the agent classes whose ``take_step`` keeps the answer in the run's scratchpad (or
#: reasoning), so asking again with the same step event carries the answer so far
_REASKABLE = ("FunctionAgent", "ReActAgent", "CodeActAgent")


def agent_step_wrapper() -> Callable[..., Any]:
    """``run_agent_step(ctx, ev: AgentSetup)`` of both agent workflow classes (outside a run
    the guard knows, left alone), asking again where the agent would end its turn on a
    truncated or empty answer (module docstring)."""
    # the delivery is a level below (the agents' request methods: request_wrapper); the
    # re-asks are here, where the step's answer is
    return model_turn_wrapper(
        _read,
        package=_PACKAGE,
        applies=in_a_run,
        interrupt=_interrupt_for_workflow,
        again=_again,
        join=_join,
        asynchronous=True,
    )


def _again(call: ModelCall, detector: str) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """The follow-up request after an answer the workflow would end the turn on: the same
    step event (the answer is in the acting agent's scratchpad or reasoning already). None
    where the workflow goes on by itself (tool calls, a ReAct retry) or the agent class may
    not keep the answer (a user's own ``take_step``)."""
    output = call.result
    if getattr(output, "tool_calls", None) or getattr(output, "retry_messages", None):
        return None
    agent = _agent_of(call.instance, getattr(output, "current_agent_name", None))
    if not any(cls.__name__ in _REASKABLE for cls in type(agent).__mro__):
        return None
    return call.args, call.kwargs


def _agent_of(instance: Any, agent_name: str | None) -> Any:
    agents = getattr(instance, "agents", None)
    return agents.get(agent_name) if isinstance(agents, dict) else instance


def _join(first: Any, second: Any) -> Any:
    """One ``AgentOutput``: the continuation's, its message's text the truncated answer's
    followed by the continuation's (the kit counts a failure and keeps the continuation)."""
    message = second.response
    text = (first.response.content or "") + (message.content or "")
    joined = message.model_copy(update={"blocks": []})
    joined.content = text
    return second.model_copy(update={"response": joined})


def request_wrapper(position: int) -> Callable[..., Any]:
    """An agent class's ``_get_response`` (``position`` 0 of the message list) or
    ``_get_streaming_response`` (1, after ``ctx``): a waiting recommendation goes into the
    message list the LLM receives (this package delivers, said once here)."""
    can_deliver(_PACKAGE)

    def deliver(call: ModelCall, message: str) -> bool:
        return _deliver(call, message, position)

    def wrapper(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        call = ModelCall(instance, args, kwargs)
        deliver_waiting(get_guard(), call, deliver, _PACKAGE)  # never raises
        return wrapped(*call.args, **call.kwargs)

    return wrapper


def _deliver(call: ModelCall, message: str, position: int) -> bool:
    """A copy of the message list with ``ChatMessage(role="user", content=message)`` at its
    end: after the tool messages that answer the assistant's tool calls (function calling)
    or the last observation (ReAct). The scratchpad and memory keep their own lists."""
    from llama_index.core.base.llms.types import ChatMessage, MessageRole

    nudge = ChatMessage(role=MessageRole.USER, content=message)
    if "current_llm_input" in call.kwargs:
        messages = call.kwargs["current_llm_input"]
        if not isinstance(messages, list):
            return False
        call.kwargs = {**call.kwargs, "current_llm_input": [*messages, nudge]}
        return True
    if len(call.args) <= position or not isinstance(call.args[position], list):
        return False
    args = list(call.args)
    args[position] = [*args[position], nudge]
    call.args = tuple(args)
    return True


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
