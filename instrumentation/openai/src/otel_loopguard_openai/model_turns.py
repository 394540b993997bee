"""What one model call answered, read from the OpenAI SDK's own response objects.

Chat Completions and Responses report the same facts in different shapes (``choices[].
finish_reason`` vs ``status`` + ``incomplete_details``; ``prompt_tokens`` vs
``input_tokens``; ``message.tool_calls`` vs ``function_call`` output items). The detectors
need one shape, :class:`ModelTurn`, so this module is the only place that knows both.
Streams are folded chunk by chunk into the same shape by the accumulators below, in O(1)
per chunk apart from the tool-call argument text the model streams.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

# Responses API: why an `incomplete` response stopped, in Chat Completions' words, so the
# truncation detector sees `length` from either API.
_INCOMPLETE_REASONS = {
    "max_output_tokens": "length",
    "content_filter": "content_filter",
}


@dataclass(slots=True)
class RequestedToolCall:
    """A tool call the model asked for in its answer (not an execution)."""

    name: str
    arguments: Any
    call_id: str | None = None


@dataclass(slots=True)
class ModelTurn:
    """One model answer: what the GenAI span attributes and the ``llm_response`` event need."""

    response_id: str | None = None
    response_model: str | None = None
    finish_reasons: list[str] = field(default_factory=list)
    input_tokens: int | None = None
    output_tokens: int | None = None
    tool_calls: list[RequestedToolCall] = field(default_factory=list)
    has_text: bool = False

    @property
    def finish_reason(self) -> str | None:
        """The first choice's reason: what an agent loop acts on."""
        return self.finish_reasons[0] if self.finish_reasons else None

    @property
    def empty(self) -> bool:
        """An end of turn with neither text nor tool calls (the premature-end symptom)."""
        return not self.has_text and not self.tool_calls


def parse_arguments(raw: Any) -> Any:
    """Tool arguments arrive as JSON text; parse them so signatures ignore key order."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def _usage_tokens(usage: Any, input_name: str, output_name: str) -> tuple[int | None, int | None]:
    if usage is None:
        return None, None
    return getattr(usage, input_name, None), getattr(usage, output_name, None)


def from_chat_completion(completion: Any) -> ModelTurn:
    """A (non-streamed) ``ChatCompletion`` or ``ParsedChatCompletion``."""
    turn = ModelTurn(
        response_id=getattr(completion, "id", None),
        response_model=getattr(completion, "model", None),
    )
    turn.input_tokens, turn.output_tokens = _usage_tokens(
        getattr(completion, "usage", None), "prompt_tokens", "completion_tokens"
    )
    for choice in getattr(completion, "choices", None) or ():
        turn.finish_reasons.append(choice.finish_reason or "")
        message = choice.message
        if message.content or getattr(message, "refusal", None):
            turn.has_text = True
        for call in message.tool_calls or ():
            function = getattr(call, "function", None)
            if function is not None:
                turn.tool_calls.append(
                    RequestedToolCall(function.name, parse_arguments(function.arguments), call.id)
                )
    return turn


def from_response(response: Any) -> ModelTurn:
    """A Responses API ``Response`` (also the one carried by a stream's terminal event)."""
    turn = ModelTurn(
        response_id=getattr(response, "id", None),
        response_model=getattr(response, "model", None),
    )
    turn.input_tokens, turn.output_tokens = _usage_tokens(
        getattr(response, "usage", None), "input_tokens", "output_tokens"
    )
    for item in getattr(response, "output", None) or ():
        item_type = getattr(item, "type", None)
        if item_type == "function_call":
            turn.tool_calls.append(
                RequestedToolCall(item.name, parse_arguments(item.arguments), item.call_id)
            )
        elif item_type == "message":
            for part in getattr(item, "content", None) or ():
                if getattr(part, "text", None) or getattr(part, "refusal", None):
                    turn.has_text = True
    status = getattr(response, "status", None)
    if status == "incomplete":
        details = getattr(response, "incomplete_details", None)
        reason = getattr(details, "reason", None)
        turn.finish_reasons.append(_INCOMPLETE_REASONS.get(reason or "", reason or "incomplete"))
    elif status == "failed":
        turn.finish_reasons.append("error")
    elif status is not None:
        turn.finish_reasons.append("tool_calls" if turn.tool_calls else "stop")
    return turn


class ChatChunkAccumulator:
    """Folds ``ChatCompletionChunk`` objects into a :class:`ModelTurn`.

    Usage arrives only when the caller asked for it (``stream_options={"include_usage":
    True}``); we never change the request to get it, so without it a streamed turn carries
    no token counts.
    """

    def __init__(self) -> None:
        self.turn = ModelTurn()
        self._reasons: dict[int, str] = {}
        # (choice index, tool index) -> [call id, name, argument text parts]
        self._calls: dict[tuple[int, int], list[Any]] = {}

    def add(self, chunk: Any) -> None:
        turn = self.turn
        turn.response_id = turn.response_id or getattr(chunk, "id", None)
        turn.response_model = turn.response_model or getattr(chunk, "model", None)
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            turn.input_tokens, turn.output_tokens = _usage_tokens(
                usage, "prompt_tokens", "completion_tokens"
            )
        for choice in getattr(chunk, "choices", None) or ():
            delta = choice.delta
            if delta is not None:
                if delta.content or getattr(delta, "refusal", None):
                    turn.has_text = True
                for call in delta.tool_calls or ():
                    entry = self._calls.setdefault((choice.index, call.index), [None, "", []])
                    entry[0] = entry[0] or call.id
                    if call.function is not None:
                        entry[1] += call.function.name or ""
                        if call.function.arguments:
                            entry[2].append(call.function.arguments)
            if choice.finish_reason:
                self._reasons[choice.index] = choice.finish_reason

    def finish(self) -> ModelTurn:
        turn = self.turn
        turn.finish_reasons = [self._reasons[index] for index in sorted(self._reasons)]
        turn.tool_calls = [
            RequestedToolCall(name, parse_arguments("".join(parts)), call_id)
            for (_, _), (call_id, name, parts) in sorted(self._calls.items())
        ]
        return turn


class ResponseEventAccumulator:
    """Keeps the terminal event of a Responses stream, which carries the whole ``Response``."""

    _TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})

    def __init__(self) -> None:
        self._final: Any = None
        self._model: str | None = None
        self._id: str | None = None

    def add(self, event: Any) -> None:
        response = getattr(event, "response", None)
        if response is None:
            return
        self._id = self._id or getattr(response, "id", None)
        self._model = self._model or getattr(response, "model", None)
        if getattr(event, "type", None) in self._TERMINAL:
            self._final = response

    def finish(self) -> ModelTurn:
        if self._final is not None:
            return from_response(self._final)
        return ModelTurn(response_id=self._id, response_model=self._model)
