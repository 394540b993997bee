"""A neutral, read-only view of one span, whatever produced it.

The on-line span processor sees SDK ``ReadableSpan`` objects; saved-trace analysis reads
OTLP or Jaeger JSON. Both turn what they have into a :class:`SpanView` so that the one
dialect mapping in :mod:`otel_loopguard.spans.events` serves them all. The view is a plain
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

from opentelemetry.trace import Status, StatusCode

_EMPTY: Mapping[str, Any] = {}


class SpanEventView(NamedTuple):
    """One span event: ``(name, attributes, time_unix_nano)``."""

    name: str
    attributes: Mapping[str, Any]
    time_unix_nano: int | None = None


@dataclass(slots=True, init=False)
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

    # Written out for mypyc, like Event's (one view per span): same parameters as the fields
    def __init__(
        self,
        name: str,
        trace_id: str,
        span_id: str,
        parent_span_id: str | None = None,
        kind: str = "internal",
        start_time_unix_nano: int | None = None,
        end_time_unix_nano: int | None = None,
        attributes: Mapping[str, Any] | None = None,
        status_code: str = "unset",
        status_description: str | None = None,
        events: Sequence[SpanEventView] = (),
        resource_attributes: Mapping[str, Any] | None = None,
        scope_name: str | None = None,
    ) -> None:
        self.name = name
        self.trace_id = trace_id
        self.span_id = span_id
        self.parent_span_id = parent_span_id
        self.kind = kind
        self.start_time_unix_nano = start_time_unix_nano
        self.end_time_unix_nano = end_time_unix_nano
        self.attributes = {} if attributes is None else attributes
        self.status_code = status_code
        self.status_description = status_description
        self.events = events
        self.resource_attributes = {} if resource_attributes is None else resource_attributes
        self.scope_name = scope_name

    @property
    def is_error(self) -> bool:
        return self.status_code == "error"


def format_trace_id(value: int) -> str:
    return format(value, "032x")


def format_span_id(value: int) -> str:
    return format(value, "016x")


_KIND_NAMES = {0: "internal", 1: "server", 2: "client", 3: "producer", 4: "consumer"}
_STATUS_NAMES = {0: "unset", 1: "ok", 2: "error"}
_UNSET = StatusCode.UNSET
_ERROR = StatusCode.ERROR
_STATUS = Status


def span_attributes(span: Any) -> Mapping[str, Any]:
    """The span's attributes as a plain dict when the SDK keeps one, else its mapping.

    ``ReadableSpan.attributes`` wraps the SDK's ``BoundedAttributes`` in a mapping proxy,
    and a missing key then costs an exception inside ``Mapping.get``; the dialect mapping
    looks up dozens of keys that are usually absent. Reading the dict underneath (never
    writing it) makes each lookup a plain ``dict.get``. Falls back to the public property
    for any other span type.
    """
    raw = getattr(span, "_attributes", None)
    inner = getattr(raw, "_dict", None)
    if isinstance(inner, dict):
        return inner
    public = span.attributes
    return public if public is not None else _EMPTY


def from_readable_span(
    span: Any, *, detection_only: bool = False, trace_id: str | None = None
) -> SpanView:
    """View an SDK span (``ReadableSpan`` or a live ``Span``) without copying its attributes.

    ``detection_only`` leaves out what the dialect mapping never reads (parent, kind,
    resource, instrumentation scope, start time): the processor calls this for every GenAI
    span on the host's hot path. ``trace_id`` is the span's trace id in hex when the caller
    already has it (the processor keeps it per trace). Tolerates partial objects (no
    context, no parent, no status): a processor hook must never fail because a span is
    unusual.
    """
    context = span.context
    if context is not None:
        hex_trace = trace_id if trace_id is not None else format(context.trace_id, "032x")
        hex_span = format(context.span_id, "016x")
    else:
        hex_trace = hex_span = ""
    view = detection_view(
        span,
        span.name or "",
        span_attributes(span),
        hex_trace,
        hex_span,
        span.status,
        span.end_time,
    )
    if not detection_only:
        parent = span.parent
        view.parent_span_id = format(parent.span_id, "016x") if parent is not None else None
        kind = span.kind
        resource = span.resource
        scope = span.instrumentation_scope
        view.kind = _KIND_NAMES.get(getattr(kind, "value", 0), "internal")
        view.start_time_unix_nano = span.start_time
        view.resource_attributes = resource.attributes if resource is not None else _EMPTY
        view.scope_name = scope.name if scope is not None else None
    return view


def detection_view(
    span: Any,
    name: str,
    attributes: Mapping[str, Any],
    trace_id: str,
    span_id: str,
    status: Any,
    end_time: int | None,
) -> SpanView:
    """:func:`from_readable_span` with ``detection_only``, from what the caller has read
    already (each property of an SDK span is a Python call; the processor's ``on_end``
    reads the name, attributes, ids, status and end time before it builds a view)."""
    if status is not None:
        if status.__class__ is _STATUS:  # its fields, not two Python properties
            code, description = status._status_code, status._description
        else:
            code, description = status.status_code, status.description
        # identity tests first: an enum's ``.value`` is a slow descriptor
        if code is _UNSET:
            status_code = "unset"
        elif code is _ERROR:
            status_code = "error"
        else:
            status_code = _STATUS_NAMES.get(getattr(code, "value", 0), "unset")
        status_description = description
    else:
        status_code = "unset"
        status_description = None
    # the SDK's ``events`` property copies its list under a lock; most spans have none,
    # which the list underneath tells without the copy (the SDK's BoundedList: its deque,
    # whose length is read in C, not through the list's Python ``__len__``)
    raw_events = getattr(span, "_events", None)
    events: tuple[SpanEventView, ...] = ()
    if raw_events is None or getattr(raw_events, "_dq", raw_events):
        events = tuple(
            SpanEventView(event.name, event.attributes or _EMPTY, event.timestamp)
            for event in span.events or ()
        )
    # positionally: keywords cost as much as everything above; the start time read from
    # the SDK span's field (one execution seen by two instrumentations is matched by time)
    start_time = getattr(span, "_start_time", None)
    return SpanView(
        name,
        trace_id,
        span_id,
        None,
        "internal",
        start_time if start_time.__class__ is int else None,
        end_time,
        attributes,
        status_code,
        status_description,
        events,
        {},
        None,
    )
