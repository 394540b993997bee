"""Delivering a ``replan``'s recommendation through LiteLLM, and the re-asks.

A hand-written agent loop over ``litellm.completion`` (or ``responses``) is the "reference
agent loop" route: it appends the assistant message and the tool results to its
``messages`` and calls again. In ``enforce`` mode the recommendation waiting for the run
(the read-only nudge, the shell hint, the continuation prompt, the re-prompt after an empty
give-up) goes into that next call once, as a user message the agent did not write, in
LiteLLM's input format (OpenAI's, which LiteLLM translates for every provider):

- ``completion`` / ``acompletion``: ``{"role": "user", "content": ...}`` after the last
  message, so after the tool messages answering the assistant's tool calls (LiteLLM merges
  it into the trailing user turn for providers that want tool results in a user turn);
- ``responses`` / ``aresponses``: a user input item after the ``function_call_output``
  items (a text ``input`` becomes a list of two user items).

Always on copies (:func:`otel_loopguard.kit.openai_format.with_user_message` /
``with_input_message``): the caller's list, which is the agent's own history, is never
changed, so the message reaches the model once. ``messages`` (and ``input``) may be given
by position, as LiteLLM's signatures allow.

The re-asks: a hand-written loop ends its turn on an answer without tool calls. When that
answer was cut off at the output token limit (``truncation``) or was empty after failing
tools (``premature_end``), :class:`ReAsker` asks again at once, inside the caller's
``completion`` call, with the continuation prompt (or the re-prompt) delivered: the caller
gets one ``ModelResponse`` whose content is the whole answer (usage summed, the last part's
finish reason), or the re-prompted answer. Only for a non-streamed ``completion`` with one
choice: a stream is already in the caller's hands when its end is known, and a Responses
call has no single message list to continue.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable
from typing import Any

from otel_loopguard.kit.model_turn import ModelCall
from otel_loopguard.kit.openai_format import with_input_message, with_user_message
from otel_loopguard.kit.recommendations import Again, Join, reask_request, reasks_allowed
from otel_loopguard.kit.scoped_call import Wrapper

PACKAGE = "litellm"
#: the request's keyword argument that holds its messages, per API
_CHAT_MESSAGES = "messages"
_RESPONSES_INPUT = "input"
#: their positions: ``completion(model, messages, ...)``, ``responses(input, model, ...)``
_CHAT_POSITION = 1
_INPUT_POSITION = 0


def _argument(call_args: tuple[Any, ...], kwargs: dict[str, Any], name: str, position: int) -> Any:
    if name in kwargs:
        return kwargs[name]
    return call_args[position] if len(call_args) > position else None


def _replaced(
    call_args: tuple[Any, ...], kwargs: dict[str, Any], name: str, position: int, value: Any
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """New ``(args, kwargs)`` with argument ``name`` (or the one at ``position``) set to
    ``value``; the caller's tuple and dict are left as they were."""
    if name not in kwargs and len(call_args) > position:
        return (*call_args[:position], value, *call_args[position + 1 :]), dict(kwargs)
    return call_args, {**kwargs, name: value}


def deliver_chat(call: ModelCall, message: str) -> bool:
    """``completion``: ``message`` as a user message at the end of a copy of ``messages``."""
    messages = with_user_message(
        _argument(call.args, call.kwargs, _CHAT_MESSAGES, _CHAT_POSITION), message
    )
    if messages is None:
        return False
    call.args, call.kwargs = _replaced(
        call.args, call.kwargs, _CHAT_MESSAGES, _CHAT_POSITION, messages
    )
    return True


def deliver_responses(call: ModelCall, message: str) -> bool:
    """``responses``: ``message`` as a user input item at the end of a copy of ``input``."""
    items = with_input_message(
        _argument(call.args, call.kwargs, _RESPONSES_INPUT, _INPUT_POSITION), message
    )
    if items is None:
        return False
    call.args, call.kwargs = _replaced(
        call.args, call.kwargs, _RESPONSES_INPUT, _INPUT_POSITION, items
    )
    return True


def _field(value: Any, name: str) -> Any:
    if isinstance(value, dict):
        return value.get(name)
    return getattr(value, name, None)


def _only_message(completion: Any) -> Any:
    """The message of a one-choice Chat Completion, or None for any other answer (a raw
    response, several choices, a stream)."""
    choices = _field(completion, "choices")
    if not isinstance(choices, list) or len(choices) != 1:
        return None
    return _field(choices[0], "message")


def again_chat(call: ModelCall, detector: str) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """The follow-up call after ``call.result``, an answer without tool calls the loop
    would end its turn on: a truncated answer continued (the request plus the answer so far
    as an assistant message; the continuation prompt is delivered after it), an empty one
    asked again (the same request; the re-prompt is delivered after the tool results).
    None for a stream, several choices or an answer that asked for tools."""
    kwargs = call.kwargs
    if kwargs.get("stream") is True:
        return None
    messages = _argument(call.args, kwargs, _CHAT_MESSAGES, _CHAT_POSITION)
    message = _only_message(call.result)
    if message is None or not isinstance(messages, (list, tuple)):
        return None
    if _field(message, "tool_calls") or _field(message, "function_call"):
        return None  # the loop runs the tools and asks again itself
    content = _field(message, "content")
    if detector == "truncation":
        if not content or not isinstance(content, str):
            return None  # nothing to continue from
        continued = [*messages, {"role": "assistant", "content": content}]
        return _replaced(call.args, kwargs, _CHAT_MESSAGES, _CHAT_POSITION, continued)
    if detector == "premature_end" and not content:
        return _replaced(call.args, kwargs, _CHAT_MESSAGES, _CHAT_POSITION, list(messages))
    return None


def join_chat(first: Any, second: Any) -> Any:
    """One ``ModelResponse`` of a truncated answer and its continuation: the second's (its
    id, finish reason) with the content of both and the usage of both; a new object,
    LiteLLM's answers are left as they were."""
    first_message = _only_message(first)
    if first_message is None or _only_message(second) is None:
        return second
    joined = (
        second.model_copy(deep=True) if hasattr(second, "model_copy") else copy.deepcopy(second)
    )
    message = joined.choices[0].message
    message.content = (_field(first_message, "content") or "") + (message.content or "")
    first_usage, usage = _field(first, "usage"), _field(joined, "usage")
    if first_usage is not None and usage is not None:
        for name in ("prompt_tokens", "completion_tokens", "total_tokens"):
            earlier, later = _field(first_usage, name), _field(usage, name)
            if isinstance(earlier, int) and isinstance(later, int):
                setattr(usage, name, earlier + later)
    return joined


class ReAsker:
    """Around a request wrapper: asks again while an answer's report queued a re-ask for
    the run (see the module docstring), up to the recoveries the detectors allow."""

    def __init__(
        self,
        guard_provider: Callable[[], Any],
        again: Again,
        join: Join,
        nested: Callable[[], bool] = lambda: False,
    ) -> None:
        self._guard_provider = guard_provider
        self._again = again
        self._join = join
        #: True inside a call an outer wrapper instruments (it asks again, not this one)
        self._nested = nested

    def wrap(self, request: Wrapper, *, asynchronous: bool) -> Wrapper:
        def wrapper(
            wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
        ) -> Any:
            if asynchronous:
                return self._async(request, wrapped, instance, args, kwargs)
            result = request(wrapped, instance, args, kwargs)
            for _ in range(self._bound()):
                follow_up = self._follow_up(instance, args, kwargs, result)
                if follow_up is None:
                    break
                (again_args, again_kwargs), detector = follow_up
                result = self._joined(
                    result, request(wrapped, instance, again_args, again_kwargs), detector
                )
            return result

        return wrapper

    async def _async(
        self,
        request: Wrapper,
        wrapped: Any,
        instance: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        result = await request(wrapped, instance, args, kwargs)
        for _ in range(self._bound()):
            follow_up = self._follow_up(instance, args, kwargs, result)
            if follow_up is None:
                break
            (again_args, again_kwargs), detector = follow_up
            second = await request(wrapped, instance, again_args, again_kwargs)
            result = self._joined(result, second, detector)
        return result

    def _bound(self) -> int:
        try:
            return reasks_allowed(self._guard_provider())
        except Exception:
            return 0

    def _follow_up(
        self, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any
    ) -> tuple[tuple[tuple[Any, ...], dict[str, Any]], str] | None:
        """The re-ask queued by ``result``'s report (the request and its detector), or
        None. Never raises (the kit counts a failing ``again``)."""
        try:
            guard = self._guard_provider()
            if not guard.deliveries.any_waiting() or self._nested():
                return None  # the common case: one test
        except Exception:
            return None
        detectors: list[str] = []

        def again(call: ModelCall, detector: str) -> Any:
            detectors.append(detector)
            return self._again(call, detector)

        call = ModelCall(instance, args, kwargs, result=result)
        request = reask_request(guard, call, again, PACKAGE)
        return None if request is None else (request, detectors[-1])

    def _joined(self, first: Any, second: Any, detector: str) -> Any:
        if detector != "truncation":
            return second  # a re-prompt's answer replaces the empty one
        try:
            return self._join(first, second)
        except Exception as exc:
            with contextlib.suppress(Exception):
                self._guard_provider().telemetry.internal_error(f"{PACKAGE}.join", exc)
            return second


__all__ = ["PACKAGE", "ReAsker", "again_chat", "deliver_chat", "deliver_responses", "join_chat"]
