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

Delivering a replan's recommendation (enforce mode): ``_call_llm`` builds its request from
the agent's ``model_context`` and hands it to ``model_client.create`` / ``create_stream``.
After the pre-flight check the call gets the agent's client behind a proxy
(:class:`CarryingClient`) that adds ``UserMessage(content=..., source="otel-loopguard")``
to the end of a copy of the messages the client is asked with: after the
``FunctionExecutionResultMessage`` answering the model's function calls, where every
provider client accepts a user message. The agent's ``model_context`` is not touched, so
the message is in that one request only. The reflection call
(``reflect_on_tool_use=True``) carries a waiting message the same way.

The re-asks: AssistantAgent ends its turn on a text answer. When that answer was cut off at
the token limit, or was empty right after failing tools, and the detectors asked for a
recovery, ``_call_llm`` is run again at once (after another pre-flight check) with the
answer so far as an ``AssistantMessage`` (a truncation) and the continuation prompt or the
re-prompt delivered after it; the agent gets one ``CreateResult`` whose content is both
texts and whose usage is both calls' (a truncation), or the new answer (an empty give-up).
With ``model_client_stream`` the continuation's chunks follow the first call's.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import Any

import wrapt

from otel_loopguard import LoopGuardInterrupt, get_guard
from otel_loopguard.kit.model_turn import ModelCall, report_turn
from otel_loopguard.kit.recommendations import (
    deliver_waiting,
    reask_request,
    reasks_allowed,
    waiting_detector,
)
from otel_loopguard.kit.run_streams import aclose_stream, async_items
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
    return _observed_call(lambda kw: wrapped(*args, **kw), kwargs, _create_result, reask=True)


def reflection_wrapper(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Wrap ``AssistantAgent._reflect_on_tool_use_flow(*, model_client, ..., agent_name, ...)``."""
    return _observed_call(lambda kw: wrapped(*args, **kw), kwargs, _reflection_response)


#: ``make(kwargs)``: the wrapped generator, called with the arguments the call is made with
Make = Callable[[dict[str, Any]], AsyncGenerator[Any, None]]


def _prepared(guard: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments after the pre-flight check: the caller's, or new ones whose
    client carries the run's waiting recommendation (raises only our interrupt)."""
    guard.preflight_llm()
    call = ModelCall(None, (), kwargs)
    # recorded on the current span, or on the run's where autogen's own records nothing
    deliver_waiting(guard, call, _deliver, "autogen")
    return call.kwargs


async def _observed_call(
    make: Make,
    kwargs: dict[str, Any],
    answer_of: Callable[[Any], _Answer | None],
    *,
    reask: bool = False,
) -> AsyncGenerator[Any, None]:
    guard = get_guard()
    outputs: AsyncGenerator[Any, None] | None = None
    items: Any = None
    try:
        outputs = make(_prepared(guard, kwargs))
        reasks = reasks_allowed(guard) if reask else 0
        held: Any = None  # the answer so far, while a re-ask continues it
        pending: str | None = None  # the detector of that re-ask
        reported = False
        in_run = False
        while True:
            turn = guard.model_turn()  # never raises
            try:
                if items is None:  # another instrumentation's iterable proxy too
                    items = async_items(outputs)
                output = await items.__anext__()
            except StopAsyncIteration:
                return
            finally:
                turn.end()
            in_run = turn.in_run
            reported = reported or turn.reported
            if in_run and not reported:
                # raises only our interrupt; a chunk or another event: nothing yet
                report_turn(guard, "autogen", _answer_report, output, answer_of, kwargs)
            if reask and answer_of(output) is not None:
                if held is not None and pending == "truncation":
                    output = _join(held, output)
                follow_up = _follow_up(guard, kwargs, output) if reasks else None
                if follow_up is not None:
                    reasks -= 1
                    held, pending = output, follow_up[1]
                    await aclose_stream(items, outputs)
                    outputs = make(_prepared(guard, follow_up[0]))
                    items = None
                    reported = False
                    continue
            yield output
    except LoopGuardInterrupt as interrupt:
        raise interrupt_for_host(interrupt) from interrupt.__cause__
    finally:
        if outputs is not None:
            await aclose_stream(items, outputs)


# -- delivery and re-asks -------------------------------------------------------------------


class CarryingClient(wrapt.ObjectProxy):  # type: ignore[misc]
    """The agent's model client for one call: ``create`` / ``create_stream`` send the
    messages they are given plus ``extra`` (our messages) at the end, in a new list; all
    else (``model_info``, usage, ``isinstance``) is the client's own."""

    def __init__(self, client: Any, extra: list[Any]) -> None:
        super().__init__(client)
        self._self_extra = tuple(extra)

    @property
    def loopguard_extra(self) -> tuple[Any, ...]:
        return self._self_extra

    def create(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        return self.__wrapped__.create([*messages, *self._self_extra], *args, **kwargs)

    def create_stream(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        return self.__wrapped__.create_stream([*messages, *self._self_extra], *args, **kwargs)


def _carrying(kwargs: dict[str, Any], extra: list[Any]) -> dict[str, Any] | None:
    """New arguments whose ``model_client`` also sends ``extra``; None without a client."""
    client = kwargs.get("model_client")
    if client is None or not callable(getattr(client, "create", None)):
        return None
    if isinstance(client, CarryingClient):  # a re-ask already carrying the answer so far
        extra = [*client.loopguard_extra, *extra]
        client = client.__wrapped__
    return {**kwargs, "model_client": CarryingClient(client, extra)}


def _deliver(call: ModelCall, message: str) -> bool:
    """The recommendation as a user message at the end of this request (module docstring)."""
    from autogen_core.models import UserMessage

    carrying = _carrying(call.kwargs, [UserMessage(content=message, source="otel-loopguard")])
    if carrying is None:
        return False
    call.kwargs = carrying
    return True


def _again(call: ModelCall, detector: str) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """The follow-up of a text answer the detectors want continued (a truncation: the
    answer so far as an assistant message) or asked again (an empty give-up: the request
    as it was); the waiting prompt is delivered after it. None for function calls."""
    content = getattr(call.result, "content", None)
    if not isinstance(content, str):
        return None
    extra: list[Any] = []
    if detector == "truncation":
        if not content:
            return None
        from autogen_core.models import AssistantMessage

        agent_name = call.kwargs.get("agent_name")
        source = agent_name if isinstance(agent_name, str) else "assistant"
        extra.append(AssistantMessage(content=content, source=source))
    carrying = _carrying(call.kwargs, extra)
    return None if carrying is None else ((), carrying)


def _follow_up(
    guard: Any, kwargs: dict[str, Any], result: Any
) -> tuple[dict[str, Any], str] | None:
    """The re-ask after ``result`` and its detector, when the answer's report queued one for
    this run (never raises)."""
    if not guard.deliveries.any_waiting():  # the common case: one test
        return None
    request = reask_request(guard, ModelCall(None, (), kwargs, result=result), _again, "autogen")
    if request is None:
        return None
    detector = waiting_detector(guard, "autogen")
    return (request[1], detector) if detector is not None else None


def _join(first: Any, second: Any) -> Any:
    """One ``CreateResult`` of a cut text and its continuation: both texts, both usages
    (never raises: ``second`` when they cannot be joined)."""
    try:
        if not (isinstance(first.content, str) and isinstance(second.content, str)):
            return second
        from autogen_core.models import RequestUsage

        usage = RequestUsage(
            prompt_tokens=first.usage.prompt_tokens + second.usage.prompt_tokens,
            completion_tokens=first.usage.completion_tokens + second.usage.completion_tokens,
        )
        thoughts = [t for t in (first.thought, second.thought) if t]
        return second.model_copy(
            update={
                "content": first.content + second.content,
                "usage": usage,
                "thought": "\n".join(thoughts) if thoughts else None,
            }
        )
    except Exception as exc:
        get_guard().telemetry.internal_error("autogen.join", exc)
        return second


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
