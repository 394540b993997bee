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
tools (``premature_end``), the kit's re-ask
(:func:`otel_loopguard.kit.model_turn.reasking_wrapper`) asks again at once, inside the
caller's ``completion`` call, with the continuation prompt (or the re-prompt) delivered: the caller
gets one ``ModelResponse`` whose content is the whole answer (usage summed, the last part's
finish reason), or the re-prompted answer. Only for a non-streamed ``completion`` with one
choice: a stream is already in the caller's hands when its end is known, and a Responses
call has no single message list to continue.
"""

from __future__ import annotations

from typing import Any

from otel_loopguard.kit.model_turn import ModelCall
from otel_loopguard.kit.openai_format import (
    continued_chat_messages,
    joined_chat_completion,
    with_input_message,
    with_user_message,
)

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


def again_chat(call: ModelCall, detector: str) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """The re-ask after ``call.result`` (see
    :func:`otel_loopguard.kit.openai_format.continued_chat_messages`), with ``messages``
    where the caller passed them (by keyword or position); None for a stream."""
    if call.kwargs.get("stream") is True:
        return None
    messages = continued_chat_messages(
        _argument(call.args, call.kwargs, _CHAT_MESSAGES, _CHAT_POSITION), call.result, detector
    )
    if messages is None:
        return None
    return _replaced(call.args, call.kwargs, _CHAT_MESSAGES, _CHAT_POSITION, messages)


#: one ``ModelResponse`` of a truncated answer and its continuation
join_chat = joined_chat_completion


__all__ = ["PACKAGE", "again_chat", "deliver_chat", "deliver_responses", "join_chat"]
