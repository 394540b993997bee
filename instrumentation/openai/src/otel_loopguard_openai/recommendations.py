"""Delivering a ``replan``'s recommendation through the OpenAI SDK, and the re-asks.

A hand-written agent loop over the SDK is the "reference agent loop" route: it appends the
assistant message and the tool results to its ``messages`` and calls ``create`` again. In
``enforce`` mode the recommendation waiting for the run (the read-only nudge, the shell
hint, the continuation prompt, the re-prompt after an empty give-up) goes into that next
request once, as a user message the agent did not write, at the end of the request:

- Chat Completions: ``{"role": "user", "content": ...}`` after the last message; the tool
  messages answering the assistant's tool calls come right after it, as the API wants, and
  a user message after them is valid;
- Responses: a user input item after the ``function_call_output`` items (a text ``input``
  becomes a list of two user items).

Always on copies (:func:`otel_loopguard.kit.openai_format.with_user_message` /
``with_input_message``): the caller's list, which is the agent's own history, is never
changed, so the message reaches the model once and is not repeated in later requests.

The re-asks: a hand-written loop ends its turn on an answer without tool calls. When that
answer was cut off at the output token limit (``truncation``) or was empty after failing
tools (``premature_end``), the kit's re-ask
(:func:`otel_loopguard.kit.model_turn.reasking_wrapper`) asks again at once, inside the
caller's ``create`` call, with the continuation prompt (or the re-prompt) delivered: the caller gets
one ``ChatCompletion`` whose content is the whole answer (usage summed, the last part's
finish reason), or the re-prompted answer. Only for a non-streamed Chat Completions
``create`` with one choice: a stream is already in the caller's hands when its end is
known, and a Responses ``create`` has no single message list to continue.
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

PACKAGE = "openai"
#: the request's keyword argument that holds its messages, per API
_CHAT_MESSAGES = "messages"
_RESPONSES_INPUT = "input"


def deliver_chat(call: ModelCall, message: str) -> bool:
    """Chat Completions: ``message`` as a user message at the end of a copy of
    ``messages`` (the SDK's request methods take keyword arguments only)."""
    messages = with_user_message(call.kwargs.get(_CHAT_MESSAGES), message)
    if messages is None:
        return False
    call.kwargs = {**call.kwargs, _CHAT_MESSAGES: messages}
    return True


def deliver_responses(call: ModelCall, message: str) -> bool:
    """Responses: ``message`` as a user input item at the end of a copy of ``input``."""
    items = with_input_message(call.kwargs.get(_RESPONSES_INPUT), message)
    if items is None:
        return False
    call.kwargs = {**call.kwargs, _RESPONSES_INPUT: items}
    return True


def again_chat(call: ModelCall, detector: str) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """The re-ask after ``call.result`` (see
    :func:`otel_loopguard.kit.openai_format.continued_chat_messages`); None for a stream."""
    if call.kwargs.get("stream") is True:
        return None
    messages = continued_chat_messages(call.kwargs.get(_CHAT_MESSAGES), call.result, detector)
    if messages is None:
        return None
    return call.args, {**call.kwargs, _CHAT_MESSAGES: messages}


#: one ``ChatCompletion`` of a truncated answer and its continuation
join_chat = joined_chat_completion


__all__ = ["PACKAGE", "again_chat", "deliver_chat", "deliver_responses", "join_chat"]
