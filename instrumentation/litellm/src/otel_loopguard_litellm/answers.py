"""What one LiteLLM model call answered, read from LiteLLM's own response objects.

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
