"""A neutral, read-only view of one span, whatever produced it.

The on-line span processor sees SDK ``ReadableSpan`` objects; saved-trace analysis reads
OTLP or Jaeger JSON. Both turn what they have into a :class:`SpanView` so that the one
dialect mapping in :mod:`otel_loopguard.span_mapping` serves them all. The view is a plain
dataclass on purpose: building it from JSON must not need the OpenTelemetry SDK, and
building it from a live span must cost a few attribute reads (no copying of attributes).

Identifiers are lower-case hex strings (32 digits for a trace id, 16 for a span id), as
OTLP JSON and Jaeger write them. ``kind`` and ``status_code`` are lower-case words
(``internal``/``server``/``client``/``producer``/``consumer``; ``unset``/``ok``/``error``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

_EMPTY: Mapping[str, Any] = {}


class SpanEventView(NamedTuple):
    """One span event: ``(name, attributes, time_unix_nano)``."""

    name: str
    attributes: Mapping[str, Any]
    time_unix_nano: int | None = None


@dataclass(slots=True)
class SpanView:
    """The parts of a span that loop detection reads."""

    name: str
    trace_id: str
    span_id: str
    parent_span_id: str | None = None
    kind: str = "internal"
    start_time_unix_nano: int | None = None
    end_time_unix_nano: int | None = None
    attributes: Mapping[str, Any] = field(default_factory=dict)
    status_code: str = "unset"
    status_description: str | None = None
    events: Sequence[SpanEventView] = ()
    resource_attributes: Mapping[str, Any] = field(default_factory=dict)
    scope_name: str | None = None

    @property
    def is_error(self) -> bool:
        return self.status_code == "error"


def format_trace_id(value: int) -> str:
    return format(value, "032x")


def format_span_id(value: int) -> str:
    return format(value, "016x")


_KIND_NAMES = {0: "internal", 1: "server", 2: "client", 3: "producer", 4: "consumer"}
_STATUS_NAMES = {0: "unset", 1: "ok", 2: "error"}


def from_readable_span(span: Any) -> SpanView:
    """View an SDK span (``ReadableSpan`` or a live ``Span``) without copying its attributes.

    Tolerates partial objects (no context, no parent, no status): a processor hook must
    never fail because a span is unusual.
    """
    context = span.context
    parent = span.parent
    status = span.status
    kind = span.kind
    resource = span.resource
    scope = span.instrumentation_scope
    raw_events = span.events
    events: tuple[SpanEventView, ...] = ()
    if raw_events:
        events = tuple(
            SpanEventView(event.name, event.attributes or _EMPTY, event.timestamp)
            for event in raw_events
        )
    return SpanView(
        name=span.name or "",
        trace_id=format_trace_id(context.trace_id) if context is not None else "",
        span_id=format_span_id(context.span_id) if context is not None else "",
        parent_span_id=format_span_id(parent.span_id) if parent is not None else None,
        kind=_KIND_NAMES.get(getattr(kind, "value", 0), "internal"),
        start_time_unix_nano=span.start_time,
        end_time_unix_nano=span.end_time,
        attributes=span.attributes if span.attributes is not None else _EMPTY,
        status_code=_STATUS_NAMES.get(getattr(status.status_code, "value", 0), "unset")
        if status is not None
        else "unset",
        status_description=status.description if status is not None else None,
        events=events,
        resource_attributes=resource.attributes if resource is not None else _EMPTY,
        scope_name=scope.name if scope is not None else None,
    )
