"""The model side of each AssistantAgent step, for budgets, max steps and empty answers.

Why this hook point (autogen-agentchat 0.7): ``ChatCompletionClient`` is abstract and every
client (OpenAI, Azure, Anthropic, Ollama, a replay or a user's own) overrides ``create`` and
``create_stream``, so wrapping the base class would see none of them. AssistantAgent makes
its first call and every call of its tool loop through one class method,
``AssistantAgent._call_llm``, an async generator that yields the streamed chunks (when
``model_client_stream`` is on) and then the ``CreateResult``.

- Before the call: the pre-flight check (a stopped run, ``max_steps``, the run's timeout, no
  token headroom), so in ``enforce`` mode a vetoed call is never made nor paid for.
- Around each step of the generator (not across its ``yield``: the agent's consumer runs
  between chunks) a ``LoopGuard.model_turn``; when the ``CreateResult`` arrives and no layer
  below (our OpenAI package under ``OpenAIChatCompletionClient``) reported the turn, one
  ``llm_response`` with its usage, finish reason and requested function calls, before the
  agent runs those tools. A STOP there (a token budget) interrupts the run.

The extra call ``reflect_on_tool_use=True`` makes after the tools does not go through
``_call_llm``: ``AssistantAgent._reflect_on_tool_use_flow`` calls the client itself and
yields only the final ``Response`` (its message carries the call's usage), so it is wrapped
the same way and reported from that ``Response`` (no finish reason there).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import Any

from otel_loopguard import LoopGuardInterrupt, get_guard
from otel_loopguard.kit.model_turn import report_turn
from otel_loopguard_autogen.runs import interrupt_for_host
from otel_loopguard_autogen.tools import decode_arguments


class _Answer:
    """What a model call answered, read from what the agent's generator yields."""

    __slots__ = ("content", "finish_reason", "usage")

    def __init__(self, content: Any, usage: Any, finish_reason: Any) -> None:
        self.content = content
        self.usage = usage
        self.finish_reason = finish_reason


def _create_result(output: Any) -> _Answer | None:
    """``_call_llm`` yields chunk events, then the ``CreateResult``."""
    if type(output).__name__ != "CreateResult":
        return None
    return _Answer(output.content, output.usage, output.finish_reason)


def _reflection_response(output: Any) -> _Answer | None:
    """``_reflect_on_tool_use_flow`` yields chunk and thought events, then a ``Response``."""
    message = getattr(output, "chat_message", None)
    if type(output).__name__ != "Response" or message is None:
        return None
    return _Answer(getattr(message, "content", None), getattr(message, "models_usage", None), None)


def call_llm_wrapper(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Wrap ``AssistantAgent._call_llm(*, model_client, ..., agent_name, ...)``."""
    return _observed_call(wrapped(*args, **kwargs), kwargs, _create_result)


def reflection_wrapper(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Wrap ``AssistantAgent._reflect_on_tool_use_flow(*, model_client, ..., agent_name, ...)``."""
    return _observed_call(wrapped(*args, **kwargs), kwargs, _reflection_response)


async def _observed_call(
    outputs: AsyncGenerator[Any, None],
    kwargs: dict[str, Any],
    answer_of: Callable[[Any], _Answer | None],
) -> AsyncGenerator[Any, None]:
    guard = get_guard()
    try:
        guard.preflight_llm()
        reported = False
        in_run = False
        while True:
            turn = guard.model_turn()  # never raises
            try:
                output = await outputs.__anext__()
            except StopAsyncIteration:
                return
            finally:
                turn.end()
            in_run = turn.in_run
            reported = reported or turn.reported
            if in_run and not reported:
                # raises only our interrupt; a chunk or another event: nothing yet
                report_turn(guard, "autogen", _answer_report, output, answer_of, kwargs)
            yield output
    except LoopGuardInterrupt as interrupt:
        raise interrupt_for_host(interrupt) from interrupt.__cause__
    finally:
        await outputs.aclose()


def _answer_report(
    output: Any, answer_of: Callable[[Any], _Answer | None], kwargs: dict[str, Any]
) -> dict[str, Any] | None:
    """The ``observe_llm_response`` arguments of the answer ``output`` is, or None for a
    chunk or another event (the answer is still to come)."""
    answer = answer_of(output)
    if answer is None:
        return None
    content = answer.content
    usage = answer.usage
    requested: list[tuple[str, Any]] = []
    said = False
    if isinstance(content, str):
        said = bool(content.strip())
    elif not isinstance(content, list):  # a structured output model
        said = content is not None
    else:
        for call in content or ():
            name = getattr(call, "name", None)
            if isinstance(name, str):
                requested.append((name, decode_arguments(getattr(call, "arguments", None))))
    agent_name = kwargs.get("agent_name")
    finish_reason = answer.finish_reason
    return {
        "model": _model_name(kwargs.get("model_client")),
        "finish_reason": finish_reason if isinstance(finish_reason, str) else None,
        "input_tokens": _tokens(getattr(usage, "prompt_tokens", None)),
        "output_tokens": _tokens(getattr(usage, "completion_tokens", None)),
        "empty": not said and not requested,
        "requested_tool_calls": requested,
        "agent_name": agent_name if isinstance(agent_name, str) else None,
    }


def _model_name(client: Any) -> str | None:
    """The model a client calls: autogen's OpenAI-style clients keep it in their create
    arguments; other clients may expose ``model``. Unknown: ``None`` (no price)."""
    try:
        create_args = getattr(client, "_create_args", None)
        name = create_args.get("model") if isinstance(create_args, dict) else None
        if name is None:
            name = getattr(client, "model", None)
    except Exception:
        return None
    return name if isinstance(name, str) and name else None


def _tokens(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
