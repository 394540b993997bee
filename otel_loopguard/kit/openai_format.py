"""The OpenAI wire format of a model call: what a request asks for and what the answer says.

Why this is in the core: several SDKs speak this shape. The OpenAI SDK returns it, LiteLLM
normalises every provider's answer to it (``ModelResponse``, ``ModelResponseStream``,
``ResponsesAPIResponse``), and OpenAI-compatible gateways and clients copy it. Our
``openai`` and ``litellm`` packages both read it; one reader here keeps what they report
to the detectors (tokens, finish reasons, requested tool calls, empty answers) and put on
their ``chat`` spans the same. It is read by duck typing (``getattr``, or a key where an
SDK hands back a plain dict), so it imports neither SDK and works on any object of that
shape.

Chat Completions and Responses report the same facts in different shapes (``choices[].
finish_reason`` vs ``status`` + ``incomplete_details``; ``prompt_tokens`` vs
``input_tokens``; ``message.tool_calls`` vs ``function_call`` output items). The detectors
need one, :class:`ModelAnswer`, so this module is the only place that knows both. Streams
are folded chunk by chunk into the same shape (:class:`ChatChunkFolder`,
:class:`ResponsesEventFolder`) in O(1) per chunk apart from the tool-call argument text the
model streams. What the answer then does to the call's span and the guard is
:mod:`otel_loopguard.kit.model_call_span`'s.

Not compiled by mypyc: it reads objects of third-party SDKs whose field types it does not
control (a compiled declared type would reject an odd value at run time), and its cost is
a few attribute reads per answer or chunk beside the SDK's own parsing of it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from typing import Any

#: request arguments that cap the answer's length, in the order the APIs prefer them
_OUTPUT_CAPS = ("max_completion_tokens", "max_tokens", "max_output_tokens")
#: numeric sampling arguments put on the span (GenAI semantic conventions)
_SAMPLING_ATTRIBUTES = (
    ("temperature", "gen_ai.request.temperature"),
    ("top_p", "gen_ai.request.top_p"),
)
# Responses API: why an `incomplete` response stopped, in Chat Completions' words, so the
# truncation detector sees `length` from either API
_INCOMPLETE_REASONS = {"max_output_tokens": "length", "content_filter": "content_filter"}
_TERMINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})


TEXT_CHARS = 8192  # answer text kept for its signature


class ModelAnswer:
    """One model answer: what the GenAI span attributes and the ``llm_response`` event need."""

    __slots__ = (
        "finish_reasons",
        "has_text",
        "input_tokens",
        "output_tokens",
        "response_id",
        "response_model",
        "text",
        "tool_calls",
    )

    def __init__(
        self,
        response_id: str | None = None,
        response_model: str | None = None,
        finish_reasons: list[str] | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        tool_calls: list[tuple[str, Any]] | None = None,
        has_text: bool = False,
    ) -> None:
        self.response_id = response_id
        self.response_model = response_model
        self.finish_reasons: list[str] = finish_reasons if finish_reasons is not None else []
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        #: (name, parsed arguments) of each tool call the model asked for, in order
        self.tool_calls: list[tuple[str, Any]] = tool_calls if tool_calls is not None else []
        self.has_text = has_text
        #: the answer's text (its first TEXT_CHARS characters), hashed by the guard for
        #: the repeated-text detector; never exported by us
        self.text = ""

    def add_text(self, value: Any) -> None:
        """Count ``value`` as answer text when it is a non-empty string, keeping a prefix."""
        if isinstance(value, str) and value:
            self.has_text = True
            if len(self.text) < TEXT_CHARS:
                self.text = (self.text + value)[:TEXT_CHARS]

    @property
    def finish_reason(self) -> str | None:
        """The first choice's reason: what an agent loop acts on."""
        return self.finish_reasons[0] if self.finish_reasons else None

    @property
    def empty(self) -> bool:
        """An end of turn with neither text nor tool calls (the premature-end symptom)."""
        return not self.has_text and not self.tool_calls


# -- reading ----------------------------------------------------------------------------------


def _field(item: Any, name: str) -> Any:
    """An attribute of an SDK object, or the key of the plain dict some SDKs hand back
    instead (LiteLLM's cached answers and parts of its Responses objects)."""
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def parse_arguments(raw: Any) -> Any:
    """Tool arguments arrive as JSON text; parsed, the repeated-step signatures ignore key
    order. No text at all is no arguments."""
    if isinstance(raw, str):
        try:
            return json.loads(raw) if raw else {}
        except ValueError:
            return raw
    return raw


def _read_usage(answer: ModelAnswer, usage: Any, input_name: str, output_name: str) -> None:
    if usage is None:
        return
    answer.input_tokens = _int_or_none(_field(usage, input_name))
    answer.output_tokens = _int_or_none(_field(usage, output_name))


def _identified(source: Any) -> ModelAnswer:
    return ModelAnswer(
        response_id=_text_or_none(_field(source, "id")),
        response_model=_text_or_none(_field(source, "model")),
    )


def read_chat_completion(completion: Any) -> ModelAnswer:
    """A non-streamed Chat Completions answer (the SDK's ``ChatCompletion`` /
    ``ParsedChatCompletion``, LiteLLM's ``ModelResponse``)."""
    answer = _identified(completion)
    _read_usage(answer, _field(completion, "usage"), "prompt_tokens", "completion_tokens")
    for choice in _field(completion, "choices") or ():
        answer.finish_reasons.append(_field(choice, "finish_reason") or "")
        message = _field(choice, "message")
        if message is None:
            continue
        content = _field(message, "content")
        if content or _field(message, "refusal"):
            answer.has_text = True
            answer.add_text(content)
        for call in _field(message, "tool_calls") or ():
            function = _field(call, "function")
            name = _field(function, "name") if function is not None else None
            if name and isinstance(name, str):
                answer.tool_calls.append((name, parse_arguments(_field(function, "arguments"))))
    return answer


def read_responses_response(response: Any) -> ModelAnswer:
    """A Responses API answer (the SDK's ``Response``, LiteLLM's ``ResponsesAPIResponse``;
    also the one a stream's terminal event carries)."""
    answer = _identified(response)
    _read_usage(answer, _field(response, "usage"), "input_tokens", "output_tokens")
    for item in _field(response, "output") or ():
        kind = _field(item, "type")
        if kind == "function_call":
            name = _field(item, "name")
            if name and isinstance(name, str):
                answer.tool_calls.append((name, parse_arguments(_field(item, "arguments"))))
        elif kind == "message":
            for part in _field(item, "content") or ():
                text = _field(part, "text")
                if text or _field(part, "refusal"):
                    answer.has_text = True
                    answer.add_text(text)
    status = _field(response, "status")
    if status == "incomplete":
        reason = _field(_field(response, "incomplete_details"), "reason") or "incomplete"
        answer.finish_reasons.append(_INCOMPLETE_REASONS.get(reason, reason))
    elif status == "failed":
        answer.finish_reasons.append("error")
    elif status is not None:
        answer.finish_reasons.append("tool_calls" if answer.tool_calls else "stop")
    return answer


class ChatChunkFolder:
    """Folds streamed Chat Completions chunks (``ChatCompletionChunk``,
    ``ModelResponseStream``) into a :class:`ModelAnswer`.

    Usage arrives only when the caller asked for it (``stream_options={"include_usage":
    True}``); we never change the request to get it, so without it a streamed answer carries
    no token counts.
    """

    __slots__ = ("_answer", "_calls", "_reasons")

    def __init__(self) -> None:
        self._answer = ModelAnswer()
        self._reasons: dict[int, str] = {}
        # (choice index, tool index) -> [name, argument text parts]
        self._calls: dict[tuple[int, int], list[Any]] = {}

    def add(self, chunk: Any) -> None:
        answer = self._answer
        answer.response_id = answer.response_id or _text_or_none(_field(chunk, "id"))
        answer.response_model = answer.response_model or _text_or_none(_field(chunk, "model"))
        usage = _field(chunk, "usage")
        if usage is not None:
            _read_usage(answer, usage, "prompt_tokens", "completion_tokens")
        for choice in _field(chunk, "choices") or ():
            index = _int_or_none(_field(choice, "index")) or 0
            delta = _field(choice, "delta")
            if delta is not None:
                content = _field(delta, "content")
                if content or _field(delta, "refusal"):
                    answer.has_text = True
                    answer.add_text(content)
                for position, call in enumerate(_field(delta, "tool_calls") or ()):
                    tool_index = _int_or_none(_field(call, "index"))
                    key = (index, position if tool_index is None else tool_index)
                    entry = self._calls.setdefault(key, ["", []])
                    function = _field(call, "function")
                    if function is not None:
                        # the name comes whole in the call's first delta (some providers
                        # behind LiteLLM repeat it in later ones)
                        entry[0] = entry[0] or _field(function, "name") or ""
                        arguments = _field(function, "arguments")
                        if arguments:
                            entry[1].append(arguments)
            reason = _field(choice, "finish_reason")
            if reason:
                self._reasons[index] = reason

    def finish(self) -> ModelAnswer:
        answer = self._answer
        answer.finish_reasons = [self._reasons[index] for index in sorted(self._reasons)]
        answer.tool_calls = [
            (name, parse_arguments("".join(parts)))
            for _, (name, parts) in sorted(self._calls.items())
            if name and isinstance(name, str)
        ]
        return answer


class ResponsesEventFolder:
    """Keeps the terminal event of a Responses stream, which carries the whole response."""

    __slots__ = ("_final", "_id", "_model")

    def __init__(self) -> None:
        self._final: Any = None
        self._id: str | None = None
        self._model: str | None = None

    def add(self, event: Any) -> None:
        response = _field(event, "response")
        if response is None:
            return
        self._id = self._id or _text_or_none(_field(response, "id"))
        self._model = self._model or _text_or_none(_field(response, "model"))
        kind = _field(event, "type")
        if getattr(kind, "value", kind) in _TERMINAL_EVENTS:  # LiteLLM's events use an enum
            self._final = response

    def finish(self) -> ModelAnswer:
        if self._final is not None:
            return read_responses_response(self._final)
        return ModelAnswer(response_id=self._id, response_model=self._model)


class ApiShape:
    """How one API answers: its non-streamed reader and its stream folder."""

    __slots__ = ("folder", "read")

    def __init__(
        self,
        read: Callable[[Any], ModelAnswer],
        folder: Callable[[], ChatChunkFolder | ResponsesEventFolder],
    ) -> None:
        self.read = read
        self.folder = folder


CHAT = ApiShape(read_chat_completion, ChatChunkFolder)
RESPONSES = ApiShape(read_responses_response, ResponsesEventFolder)


# -- the request ------------------------------------------------------------------------------


def with_user_message(messages: Any, text: str) -> list[Any] | None:
    """A copy of a Chat Completions ``messages`` list with ``text`` as a user message at its
    end (after the tool messages that answer the last assistant message's tool calls, where
    the API wants them), or None when ``messages`` is not a list. The caller's list and its
    messages are left as they were."""
    if not isinstance(messages, (list, tuple)):
        return None
    return [*messages, {"role": "user", "content": text}]


def with_input_message(items: Any, text: str) -> list[Any] | None:
    """A copy of a Responses API ``input`` (a text, or a list of input items) with ``text``
    as a user input item at its end (after the ``function_call_output`` items), or None for
    another shape."""
    if isinstance(items, str):
        return [{"role": "user", "content": items}, {"role": "user", "content": text}]
    if not isinstance(items, (list, tuple)):
        return None
    return [*items, {"role": "user", "content": text}]


def _only_message(completion: Any) -> Any:
    """The message of a one-choice Chat Completion, or None for any other answer (a raw
    response, several choices, a stream)."""
    choices = _field(completion, "choices")
    if not isinstance(choices, list) or len(choices) != 1:
        return None
    return _field(choices[0], "message")


def continued_chat_messages(messages: Any, answer: Any, detector: str) -> list[Any] | None:
    """The messages of the re-ask after ``answer``, a Chat Completion without tool calls a
    hand-written loop would end its turn on (the kit's ``again``): a truncated answer
    continued (``messages`` plus the answer so far as an assistant message; the continuation
    prompt is delivered after it), an empty one asked again (``messages`` as they were; the
    re-prompt is delivered after the tool results). None for a stream, several choices, an
    answer that asked for tools (the loop runs them and asks again itself)."""
    message = _only_message(answer)
    if message is None or not isinstance(messages, (list, tuple)):
        return None
    if _field(message, "tool_calls") or _field(message, "function_call"):
        return None
    content = _field(message, "content")
    if detector == "truncation":
        if not content or not isinstance(content, str):
            return None  # nothing to continue from
        return [*messages, {"role": "assistant", "content": content}]
    if detector == "premature_end" and not content:
        return list(messages)
    return None


def joined_chat_completion(first: Any, second: Any) -> Any:
    """One Chat Completion (the OpenAI SDK's, LiteLLM's ``ModelResponse``) of a truncated
    answer and its continuation: the second's (its id, finish reason) with the content of
    both and the usage of both; a new object, the SDK's answers are left as they were."""
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


def output_token_cap(request: Mapping[str, Any]) -> int:
    """The most output tokens the request allows (0 when unbounded).

    Passed to the pre-flight check as the tokens the call may still spend, so a token budget
    stops the request that *would* pass it, not only the one after. (The OpenAI SDK's
    ``omit`` / ``NOT_GIVEN`` sentinels are not numbers, so they count as absent.)
    """
    for key in _OUTPUT_CAPS:
        value = _int_or_none(request.get(key))
        if value is not None:
            return max(value, 0)
    return 0


def chat_span_name(model: str | None) -> str:
    return f"chat {model}" if model else "chat"


def chat_span_attributes(
    provider: str, model: str | None, request: Mapping[str, Any], max_tokens: int
) -> dict[str, Any]:
    """The GenAI attributes a ``chat`` span starts with (never any message content)."""
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
    }
    if model:
        attributes["gen_ai.request.model"] = model
    if max_tokens:
        attributes["gen_ai.request.max_tokens"] = max_tokens
    for key, attribute in _SAMPLING_ATTRIBUTES:
        value = request.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            attributes[attribute] = value
    return attributes
