"""Small helpers between live spans and events: origin ids, baggage, content attributes."""

from __future__ import annotations

import json
import time
from typing import Any

from opentelemetry import baggage, trace

_CONTENT_ATTRIBUTE_MAX_CHARS = 8_192
_BAGGAGE_CONVERSATION_KEYS = ("gen_ai.conversation.id", "session.id")


def context_of(span: Any) -> Any:
    if span is None:
        return None
    return trace.set_span_in_context(span)


def baggage_conversation() -> str | None:
    for key in _BAGGAGE_CONVERSATION_KEYS:
        value = baggage.get_baggage(key)
        if isinstance(value, str) and value:
            return value
    return None


def content_attribute(value: Any) -> str:
    """A JSON string for a span attribute; never raises (cyclic, non-JSON, huge values)."""
    try:
        text = value if isinstance(value, str) else json.dumps(value, default=repr)
    except Exception:  # not JSON, cyclic, too deep, or a repr/items() that raises
        try:
            text = repr(value)
        except Exception:
            text = f"<{type(value).__name__}>"
    if len(text) > _CONTENT_ATTRIBUTE_MAX_CHARS:
        text = text[: _CONTENT_ATTRIBUTE_MAX_CHARS - 1] + "…"
    return text


def origin(context: trace.SpanContext) -> dict[str, Any]:
    if not context.is_valid:
        return {"timestamp": time.time()}
    return {
        "trace_id": format(context.trace_id, "032x"),
        "span_id": format(context.span_id, "016x"),
        "timestamp": time.time(),
    }


def status_code(exc: BaseException) -> int | None:
    for name in ("status_code", "status", "code"):
        value = getattr(exc, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
            return value
    response = getattr(exc, "response", None)
    value = getattr(response, "status_code", None)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def token_count(value: Any) -> int | None:
    """A token count as a framework reports it (an int, a float, a numeric string) as an
    ``int``; ``None`` when it is none of those. The event's field is an ``int``, which a
    compiled build enforces."""
    if value is None or value.__class__ is int:
        return value  # type: ignore[no-any-return]
    try:
        count = int(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return None if isinstance(value, bool) else count
