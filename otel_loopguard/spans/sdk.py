"""Reading SDK spans fast: their private fields where the SDK's properties return them as
they are (each property read is a Python call; the hooks read five of them per span)."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.trace import ReadableSpan


def _fields_are_plain() -> bool:
    """True when the SDK's ``ReadableSpan`` properties return its private fields as they are.

    Each property read is a Python call; the hooks read five of them per span. Checked
    once on a probe span, so an SDK that stores them differently gets the properties.
    """
    try:
        from opentelemetry.trace import SpanContext, Status, StatusCode

        probe = ReadableSpan(
            "probe",
            SpanContext(1, 2, False),
            SpanContext(1, 3, True),
            status=Status(StatusCode.ERROR, "probe"),
            end_time=7,
        )
        return (
            probe._name is probe.name
            and probe._context is probe.context
            and probe._parent is probe.parent
            and probe._status is probe.status
            and probe._end_time is probe.end_time
        )
    except Exception:
        return False


_SDK_FIELDS_PLAIN = _fields_are_plain()
_PROPERTIES = ("name", "context", "parent", "status", "end_time")
_plain_classes: dict[type, bool] = {}
#: the span classes known to be plain (a set: the processor's filter tests membership)
PLAIN_CLASSES: set[type] = set()


def plain_fields(cls: type) -> bool:
    """Whether spans of ``cls`` can be read through the SDK's private fields: the SDK's
    own classes (``ReadableSpan``, the live ``Span``) and subclasses that keep its
    properties; anything else is read through its properties."""
    plain = _plain_classes.get(cls)
    if plain is None:
        plain = _SDK_FIELDS_PLAIN and all(
            getattr(cls, name, None) is ReadableSpan.__dict__[name] for name in _PROPERTIES
        )
        if len(_plain_classes) < 64:  # a handful of span classes; stay bounded
            _plain_classes[cls] = plain
            if plain:
                PLAIN_CLASSES.add(cls)
    return plain


def status_and_end(span: Any) -> tuple[Any, int | None]:
    """The span's status and end time."""
    if plain_fields(span.__class__):
        return span._status, span._end_time
    return span.status, span.end_time
