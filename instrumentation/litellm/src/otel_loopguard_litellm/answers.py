"""What one LiteLLM model call answered, read from LiteLLM's own response objects.

``litellm.responses`` answers in the OpenAI Responses shape instead (``output`` items,
``status`` + ``incomplete_details``, ``usage.input_tokens``): the second half of this
module reads that one into the same :class:`Answer`.

LiteLLM normalises every provider's answer to the OpenAI Chat Completions shape: a
``ModelResponse`` (``choices[].message`` with ``content`` / ``tool_calls``,
``choices[].finish_reason``, ``usage.prompt_tokens`` / ``completion_tokens``) and, when
streamed, ``ModelResponseStream`` chunks (``choices[].delta``; usage on a final chunk
when the caller asked for ``stream_options={"include_usage": True}``). So one reader
serves Anthropic, Bedrock, Gemini, Ollama and the rest alike; this module is the only
place that knows that shape. Streams are folded chunk by chunk in O(1) per chunk apart
from the tool-call argument text the model streams.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Answer:
    """One model answer: what the span attributes and the ``llm_response`` event need."""

    response_id: str | None = None
    response_model: str | None = None
    finish_reasons: list[str] = field(default_factory=list)
    input_tokens: int | None = None
    output_tokens: int | None = None
    #: (name, parsed arguments) of each tool call the model asked for, in order
    tool_calls: list[tuple[str, Any]] = field(default_factory=list)
    has_text: bool = False

    @property
    def finish_reason(self) -> str | None:
        """The first choice's reason: what an agent loop acts on."""
        return self.finish_reasons[0] if self.finish_reasons else None

    @property
    def empty(self) -> bool:
        """An end of turn with neither text nor tool calls (the premature-end symptom)."""
        return not self.has_text and not self.tool_calls


def _arguments(raw: Any) -> Any:
    """Arguments arrive as JSON text; parsed, the repeated-step signatures ignore key order."""
    if isinstance(raw, str):
        try:
            return json.loads(raw) if raw else {}
        except ValueError:
            return raw
    return raw


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _read_usage(answer: Answer, usage: Any) -> None:
    if usage is None:
        return
    if isinstance(usage, dict):  # a cached answer rebuilt from a dict
        prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    else:
        prompt = getattr(usage, "prompt_tokens", None)
        completion = getattr(usage, "completion_tokens", None)
    answer.input_tokens = _int_or_none(prompt)
    answer.output_tokens = _int_or_none(completion)


def from_model_response(response: Any) -> Answer:
    """A non-streamed ``ModelResponse``."""
    answer = Answer(
        response_id=getattr(response, "id", None),
        response_model=getattr(response, "model", None),
    )
    _read_usage(answer, getattr(response, "usage", None))
    for choice in getattr(response, "choices", None) or ():
        answer.finish_reasons.append(getattr(choice, "finish_reason", None) or "")
        message = getattr(choice, "message", None)
        if message is None:
            continue
        if getattr(message, "content", None) or getattr(message, "refusal", None):
            answer.has_text = True
        for call in getattr(message, "tool_calls", None) or ():
            function = getattr(call, "function", None)
            if function is not None and getattr(function, "name", None):
                answer.tool_calls.append((function.name, _arguments(function.arguments)))
    return answer


class StreamFolder:
    """Folds ``ModelResponseStream`` chunks into an :class:`Answer`."""

    __slots__ = ("_answer", "_calls", "_reasons")

    def __init__(self) -> None:
        self._answer = Answer()
        self._reasons: dict[int, str] = {}
        # (choice index, tool index) -> [name, argument text parts]
        self._calls: dict[tuple[int, int], list[Any]] = {}

    def add(self, chunk: Any) -> None:
        answer = self._answer
        answer.response_id = answer.response_id or getattr(chunk, "id", None)
        answer.response_model = answer.response_model or getattr(chunk, "model", None)
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            _read_usage(answer, usage)
        for choice in getattr(chunk, "choices", None) or ():
            index = getattr(choice, "index", 0) or 0
            delta = getattr(choice, "delta", None)
            if delta is not None:
                if getattr(delta, "content", None) or getattr(delta, "refusal", None):
                    answer.has_text = True
                for position, call in enumerate(getattr(delta, "tool_calls", None) or ()):
                    tool_index = getattr(call, "index", None)
                    key = (index, tool_index if isinstance(tool_index, int) else position)
                    entry = self._calls.setdefault(key, ["", []])
                    function = getattr(call, "function", None)
                    if function is not None:
                        # LiteLLM sends the name whole, once (some providers repeat it)
                        entry[0] = entry[0] or getattr(function, "name", None) or ""
                        if getattr(function, "arguments", None):
                            entry[1].append(function.arguments)
            reason = getattr(choice, "finish_reason", None)
            if reason:
                self._reasons[index] = reason

    def finish(self) -> Answer:
        answer = self._answer
        answer.finish_reasons = [self._reasons[index] for index in sorted(self._reasons)]
        answer.tool_calls = [
            (name, _arguments("".join(parts)))
            for _, (name, parts) in sorted(self._calls.items())
            if name
        ]
        return answer


# Responses API: why an `incomplete` response stopped, in Chat Completions' words, so the
# truncation detector sees `length` from either API
_INCOMPLETE_REASONS = {"max_output_tokens": "length", "content_filter": "content_filter"}


def _field(item: Any, name: str) -> Any:
    """LiteLLM's Responses objects mix pydantic models and plain dicts."""
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def from_responses_response(response: Any) -> Answer:
    """A ``ResponsesAPIResponse`` (``litellm.responses``; also the one a stream's terminal
    event carries)."""
    answer = Answer(
        response_id=_field(response, "id"),
        response_model=_field(response, "model"),
    )
    usage = _field(response, "usage")
    if usage is not None:
        answer.input_tokens = _int_or_none(_field(usage, "input_tokens"))
        answer.output_tokens = _int_or_none(_field(usage, "output_tokens"))
    for item in _field(response, "output") or ():
        kind = _field(item, "type")
        if kind == "function_call" and _field(item, "name"):
            answer.tool_calls.append((_field(item, "name"), _arguments(_field(item, "arguments"))))
        elif kind == "message":
            for part in _field(item, "content") or ():
                if _field(part, "text") or _field(part, "refusal"):
                    answer.has_text = True
    status = _field(response, "status")
    if status == "incomplete":
        reason = _field(_field(response, "incomplete_details"), "reason") or "incomplete"
        answer.finish_reasons.append(_INCOMPLETE_REASONS.get(reason, reason))
    elif status == "failed":
        answer.finish_reasons.append("error")
    elif status is not None:
        answer.finish_reasons.append("tool_calls" if answer.tool_calls else "stop")
    return answer


class ResponsesEventFolder:
    """Keeps the terminal event of a Responses stream, which carries the whole response."""

    __slots__ = ("_final", "_id", "_model")

    _TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})

    def __init__(self) -> None:
        self._final: Any = None
        self._id: str | None = None
        self._model: str | None = None

    def add(self, event: Any) -> None:
        response = _field(event, "response")
        if response is None:
            return
        self._id = self._id or _field(response, "id")
        self._model = self._model or _field(response, "model")
        kind = _field(event, "type")
        if getattr(kind, "value", kind) in self._TERMINAL:  # LiteLLM's events use an enum
            self._final = response

    def finish(self) -> Answer:
        if self._final is not None:
            return from_responses_response(self._final)
        return Answer(response_id=self._id, response_model=self._model)
