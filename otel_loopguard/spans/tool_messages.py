"""Tool calls and results read from a model span's input messages.

A hand-written agent loop traced only by a model-call instrumentation (the official
``opentelemetry-instrumentation-openai-v2``) has no tool spans: its tools are the
application's own code. What the tools got and returned is still there, with content
capture on, in the next model call's request: ``gen_ai.input.messages`` holds the
assistant message that asked for the calls (``tool_call`` parts: id, name, arguments) and,
after it, the messages that answer them (``tool_call_response`` parts: id, response). Read
as ``tool_call`` and ``tool_result`` events, the default policy gets the no-progress evidence
it needs (the same call returning the same empty result) instead of only the repeated-steps
warning.

Only the answers at the end of the request count (after its last assistant message): the
earlier ones were read from the previous request already, or, in a conversation carried over
from another trace, belong to history. A response whose call the request does not name, or
that records no content, is skipped. The follower reads these only in a trace that has no
tool span (:mod:`otel_loopguard.spans.follower`): where tool spans exist they report the
executions, and reading both would count each twice.
"""

from __future__ import annotations

import json
from typing import Any, Final

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.events import Event, EventKind
from otel_loopguard.engine.signatures import call_signature, output_signature
from otel_loopguard.spans.dialects import PLACEHOLDERS
from otel_loopguard.spans.view import SpanView

#: the request's messages, as one JSON string (GenAI semantic conventions)
INPUT_MESSAGES_KEY: Final = "gen_ai.input.messages"
#: above this size the request is not parsed (a long conversation: the cost grows with it)
_INPUT_MESSAGES_LIMIT: Final = 262_144
#: answers read from one request at most
_MAX_ANSWERS: Final = 64
#: answer ids a trace remembers as read
_MAX_READ: Final = 4096
#: OpenInference's indexed request messages (``llm.input_messages.{i}.message.*``); the
#: first one's role tells a span has them
_OPENINFERENCE_MESSAGE: Final = "llm.input_messages."
OPENINFERENCE_FIRST_ROLE: Final = "llm.input_messages.0.message.role"
#: indexed messages read at most (a longer conversation's tail is not read)
_MAX_INDEXED_MESSAGES: Final = 512
_PLACEHOLDERS: Final = PLACEHOLDERS


def answered_calls(
    view: SpanView,
    run_id: str,
    config: LoopGuardConfig,
    actor: str | None,
    read: set[str] | None = None,
) -> list[Event]:
    """``tool_call`` and ``tool_result`` events, in pairs, for the tool answers at the end of
    a model span's request; empty when it records none. Never raises on odd shapes.

    ``read``: the answers read already in this trace, by run and id (updated here). A
    request the application sends again (its own retry after a failure) carries the same
    answers; read twice they would be the same call twice, and a third time a loop."""
    attributes = view.attributes
    text = attributes.get(INPUT_MESSAGES_KEY)
    if text is None and OPENINFERENCE_FIRST_ROLE in attributes:
        messages: Any = openinference_messages(attributes)
    else:
        if not isinstance(text, str) or "tool_call_response" not in text:
            return []
        if len(text) > _INPUT_MESSAGES_LIMIT:
            return []
        try:
            messages = json.loads(text)
        except ValueError:
            return []
    if not isinstance(messages, list):
        return []
    last_assistant = -1
    for index, message in enumerate(messages):
        if isinstance(message, dict) and message.get("role") == "assistant":
            last_assistant = index
    if last_assistant < 0:
        return []
    asked = _calls_asked(messages[last_assistant])
    start = view.start_time_unix_nano
    timestamp = start / 1e9 if isinstance(start, int) else None
    max_chars = config.signature_max_chars
    events: list[Event] = []
    for message in messages[last_assistant + 1 :]:
        for part in _parts(message):
            if part.get("type") != "tool_call_response" or "response" not in part:
                continue
            answer_id = part.get("id")
            call = asked.get(answer_id) if isinstance(answer_id, str) else None
            if call is None and len(asked) == 1:
                # ids may differ between the two sides (the Responses API's fc_/call_ ids)
                call = next(iter(asked.values()))
            if call is None or len(events) >= 2 * _MAX_ANSWERS:
                continue
            name, arguments, call_id = call
            if read is not None:
                # per run: two runs in one trace may reuse ids (two invocations under one
                # application span, each of whose conversations starts again at call_1)
                key = f"{run_id}\x00{answer_id if isinstance(answer_id, str) else call_id}"
                if key in read:
                    continue
                if len(read) >= _MAX_READ:
                    read.clear()  # bounded: a trace of thousands of tool answers
                read.add(key)
            events.extend(
                _pair(
                    view,
                    run_id,
                    actor,
                    name,
                    arguments,
                    call_id,
                    part["response"],
                    timestamp,
                    max_chars,
                )
            )
    return events


def openinference_messages(attributes: Any) -> list[dict[str, Any]]:
    """OpenInference's request messages (``llm.input_messages.{i}.message.*``: ``role``,
    ``content``, a tool message's ``tool_call_id``, an assistant message's
    ``tool_calls.{j}.tool_call.id`` / ``.function.name`` / ``.function.arguments``) in the
    conventions' shape read above; hidden content (``__REDACTED__``) is left out, as not
    recorded. Only the messages from the last assistant message on get their parts."""
    roles: list[str] = []
    for index in range(_MAX_INDEXED_MESSAGES):
        role = attributes.get(f"{_OPENINFERENCE_MESSAGE}{index}.message.role")
        if not isinstance(role, str):
            break
        roles.append(role)
    last = max((i for i, role in enumerate(roles) if role == "assistant"), default=-1)
    messages: list[dict[str, Any]] = [{"role": role, "parts": []} for role in roles]
    for index in range(max(last, 0), len(roles)):
        prefix = f"{_OPENINFERENCE_MESSAGE}{index}.message."
        parts = messages[index]["parts"]
        if roles[index] == "tool":
            content = attributes.get(prefix + "content")
            if content is not None and content not in _PLACEHOLDERS:
                call_id = attributes.get(prefix + "tool_call_id")
                parts.append({"type": "tool_call_response", "id": call_id, "response": content})
        elif roles[index] == "assistant":
            for number in range(_MAX_ANSWERS):
                call = f"{prefix}tool_calls.{number}.tool_call."
                name = attributes.get(call + "function.name")
                if not isinstance(name, str):
                    break
                part: dict[str, Any] = {
                    "type": "tool_call",
                    "id": attributes.get(call + "id"),
                    "name": name,
                }
                arguments = attributes.get(call + "function.arguments")
                if isinstance(arguments, str) and arguments not in _PLACEHOLDERS:
                    try:
                        part["arguments"] = json.loads(arguments)
                    except ValueError:
                        part["arguments"] = arguments
                parts.append(part)
    return messages


def _parts(message: Any) -> list[dict[str, Any]]:
    parts = message.get("parts") if isinstance(message, dict) else None
    return [part for part in parts if isinstance(part, dict)] if isinstance(parts, list) else []


def _calls_asked(message: Any) -> dict[str, tuple[str, Any, str]]:
    """The assistant message's tool calls that record their arguments, by id."""
    asked: dict[str, tuple[str, Any, str]] = {}
    for part in _parts(message):
        call_id = part.get("id")
        name = part.get("name")
        if (
            part.get("type") == "tool_call"
            and isinstance(call_id, str)
            and isinstance(name, str)
            and "arguments" in part
        ):
            asked[call_id] = (name, part["arguments"], call_id)
    return asked


def _pair(
    view: SpanView,
    run_id: str,
    actor: str | None,
    name: str,
    arguments: Any,
    call_id: str,
    response: Any,
    timestamp: float | None,
    max_chars: int,
) -> list[Event]:
    origin: dict[str, Any] = {
        "trace_id": view.trace_id or None,
        "span_id": view.span_id or None,
        "timestamp": timestamp,
    }
    exact, near = call_signature(name, arguments, max_chars=max_chars)
    call = Event(EventKind.TOOL_CALL, run_id, actor, name, exact, near, call_id, **origin)
    call.arguments = arguments
    exact, near = output_signature(response, max_chars=max_chars)
    result = Event(EventKind.TOOL_RESULT, run_id, actor, name, exact, near, call_id, **origin)
    result.output = response
    for event in (call, result):
        event.details["from_request_messages"] = True
    return [call, result]
