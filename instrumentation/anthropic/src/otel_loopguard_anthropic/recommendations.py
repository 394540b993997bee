"""A replan's recommendation in a Messages API request, and the re-asks of a turn.

The request is the JSON body the SDK holds in its ``FinalRequestOptions`` (``json_data``)
when it reaches the client's ``request``. The API's ordering rules decide where our text
may go: turns alternate (never two user turns in a row) and a user turn that answers tool
calls starts with its ``tool_result`` blocks. So the message becomes a ``text`` block
appended to the trailing user turn (after its ``tool_result`` blocks; a string content
becomes a block list), or a new user turn when the conversation ends with the assistant.
We never change the caller's objects: the options, the body, the message list and the last
message are copies; the caller's history stays as it was.

The re-asks (the reference agent loop's): a hand-written loop ends its turn on an answer
without ``tool_use`` blocks, so an answer cut off at ``max_tokens`` would be taken as the
final answer, and an empty ``end_turn`` after failing tools as giving up. For the
non-streamed ``create`` we ask again at once (the kit delivers the continuation prompt or the
re-prompt into that request) and hand the caller one ``Message``: the parts' text joined,
the last part's stop reason, the usage summed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from opentelemetry import trace

if TYPE_CHECKING:  # pragma: no cover
    from otel_loopguard.kit.model_turn import ModelCall

PACKAGE = "anthropic"
_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


def _get(value: Any, name: str) -> Any:
    if isinstance(value, dict):
        return value.get(name)
    return getattr(value, name, None)


# -- the request ----------------------------------------------------------------------------


def request_options(call: ModelCall) -> Any:
    """The ``FinalRequestOptions`` of a ``request(cast_to, options, ...)`` call."""
    args = call.args
    return args[1] if len(args) > 1 else call.kwargs.get("options")


def _with_options(call: ModelCall, options: Any) -> None:
    """``call`` made with ``options`` (new args / kwargs; the caller's are left alone)."""
    if len(call.args) > 1:
        call.args = (call.args[0], options, *call.args[2:])
    else:
        call.kwargs = {**call.kwargs, "options": options}


def _options_with_body(options: Any, body: dict[str, Any]) -> Any:
    """A copy of ``options`` carrying ``body``; a fresh idempotency key (a new request)."""
    update = {"json_data": body, "idempotency_key": None}
    copy = getattr(options, "model_copy", None)
    if copy is not None:
        return copy(update=update)
    return options.copy(update=update)  # pydantic 1


def with_user_text(body: dict[str, Any], text: str) -> dict[str, Any] | None:
    """A copy of ``body`` whose conversation ends with ``text`` in a user turn (see the module
    docstring), or None when the body holds no conversation to add it to."""
    messages = body.get("messages")
    if not isinstance(messages, (list, tuple)) or not messages:
        return None
    last = messages[-1]
    block = {"type": "text", "text": text}
    if _get(last, "role") != "user":
        return {**body, "messages": [*messages, {"role": "user", "content": [block]}]}
    content = _get(last, "content")
    if isinstance(content, str):
        blocks: list[Any] = [{"type": "text", "text": content}] if content else []
    elif isinstance(content, (list, tuple)):
        blocks = list(content)
    else:
        return None
    turn = dict(last) if isinstance(last, dict) else {"role": "user"}
    turn["content"] = [*blocks, block]
    return {**body, "messages": [*messages[:-1], turn]}


def deliver(call: ModelCall, message: str) -> bool:
    """The kit's ``deliver``: ``message`` into the Messages request held in ``call``."""
    options = request_options(call)
    body = getattr(options, "json_data", None)
    if not isinstance(body, dict):
        return False
    new_body = with_user_text(body, message)
    if new_body is None:
        return False
    _with_options(call, _options_with_body(options, new_body))
    return True


# -- the re-asks ----------------------------------------------------------------------------


def _blocks(message: Any) -> list[Any]:
    content = _get(message, "content")
    return list(content) if isinstance(content, (list, tuple)) else []


def _has_tool_use(message: Any) -> bool:
    return any(_get(b, "type") in ("tool_use", "server_tool_use") for b in _blocks(message))


def _is_answer(result: Any) -> bool:
    """A parsed ``Message`` (not a stream, not a raw response)."""
    return isinstance(_get(result, "stop_reason"), str) and isinstance(
        _get(result, "content"), (list, tuple)
    )


def _partial_turn(messages: list[Any], text: str) -> list[Any]:
    """``messages`` ending with an assistant turn holding ``text`` (added to the caller's
    own trailing assistant turn, a prefill, rather than a second assistant turn)."""
    block = {"type": "text", "text": text}
    last = messages[-1] if messages else None
    if last is None or _get(last, "role") != "assistant":
        return [*messages, {"role": "assistant", "content": [block]}]
    content = _get(last, "content")
    if isinstance(content, str):
        blocks: list[Any] = [{"type": "text", "text": content}] if content else []
    else:
        blocks = list(content or ())
    return [*messages[:-1], {"role": "assistant", "content": [*blocks, block]}]


def again(call: ModelCall, detector: str) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """The kit's ``again``: the follow-up of a non-streamed Messages request.

    After a truncation: the request plus the partial answer's text as an assistant turn (the
    continuation prompt is then delivered after it as a user turn). After a premature end:
    the request as it was (the empty answer cannot be sent back: the API refuses an
    assistant turn without content), the re-prompt is delivered into its trailing user turn
    beside the failed ``tool_result`` blocks. None for anything else (a stream, a raw
    response, a truncated ``tool_use`` call, an answer with no text to continue).
    """
    result = call.result
    options = request_options(call)
    body = getattr(options, "json_data", None)
    if not isinstance(body, dict) or body.get("stream") or not _is_answer(result):
        return None
    messages = body.get("messages")
    if not isinstance(messages, (list, tuple)) or not messages:
        return None
    if detector == "truncation":
        if _get(result, "stop_reason") != "max_tokens" or _has_tool_use(result):
            return None
        text = "".join(_get(b, "text") or "" for b in _blocks(result) if _get(b, "type") == "text")
        if not text:
            return None
        new_body = {**body, "messages": _partial_turn(list(messages), text)}
    elif detector == "premature_end":
        if _get(result, "stop_reason") != "end_turn" or _has_tool_use(result):
            return None
        new_body = {**body, "messages": list(messages)}
    else:
        return None
    new_options = _options_with_body(options, new_body)
    if len(call.args) > 1:
        return (call.args[0], new_options, *call.args[2:]), dict(call.kwargs)
    return tuple(call.args), {**call.kwargs, "options": new_options}


def _summed_usage(first: Any, second: Any) -> Any:
    usage = _get(second, "usage")
    earlier = _get(first, "usage")
    if usage is None or earlier is None:
        return usage
    update = {}
    for name in _USAGE_FIELDS:
        a, b = _get(earlier, name), _get(usage, name)
        if isinstance(a, int) and isinstance(b, int):
            update[name] = a + b
    return usage.model_copy(update=update)


def join(first: Any, second: Any) -> Any:
    """The kit's ``join``: one ``Message`` of a truncated answer and its continuation: the
    first part's text followed by the second's (one text block where they meet), the second
    part's stop reason and id, the tokens of both."""
    head = _blocks(first)
    tail = _blocks(second)
    if head and tail and _get(head[-1], "type") == "text" and _get(tail[0], "type") == "text":
        met = head[-1].model_copy(update={"text": head[-1].text + tail[0].text})
        content = [*head[:-1], met, *tail[1:]]
    else:
        content = [*head, *tail]
    return second.model_copy(update={"content": content, "usage": _summed_usage(first, second)})


# -- where the delivery is recorded ---------------------------------------------------------


class PendingSpan:
    """Stands in for the SDK's span of this request, which starts only inside ``request``
    (after we deliver): the delivery event waits here and goes on that span when it starts
    (:meth:`replay`), or on the span that was current when the SDK makes none. For the run it
    belongs to, it is the current span."""

    __slots__ = ("_attributes", "_current", "_events")

    def __init__(self) -> None:
        self._current = trace.get_current_span()
        self._events: list[tuple[str, Any]] = []
        self._attributes: dict[str, Any] = {}

    def get_span_context(self) -> Any:
        return self._current.get_span_context()

    def is_recording(self) -> bool:
        return True

    def add_event(self, name: str, attributes: Any = None, timestamp: Any = None) -> None:
        self._events.append((name, attributes))

    def set_attribute(self, key: str, value: Any) -> None:
        self._attributes[key] = value

    def replay(self, span: Any = None) -> None:
        """Put what was recorded on ``span`` (default: the span current when it was made),
        once."""
        target = span if span is not None and span.is_recording() else self._current
        events, self._events = self._events, []
        attributes, self._attributes = self._attributes, {}
        if not target.is_recording():
            return
        for name, event_attributes in events:
            target.add_event(name, event_attributes)
        if attributes:
            target.set_attributes(attributes)
