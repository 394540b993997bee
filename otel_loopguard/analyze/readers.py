"""Exported traces in, :class:`~otel_loopguard.spans.view.SpanView` out, one span at a time.

Formats, detected from the content (never from the file name):

* **OTLP JSON**: one ``ExportTraceServiceRequest`` / ``TracesData`` object
  (``resourceSpans`` → ``scopeSpans`` → ``spans``), pretty-printed or not, of any size.
* **JSON lines** as the Collector's ``file`` exporter writes them: one such object per line.
* **Grafana Tempo**'s trace API answers: ``{"batches": [...]}`` (``/api/traces/{id}``,
  the resource spans under another name) and ``{"trace": {"resourceSpans": [...]}}``
  (``/api/v2/traces/{id}``).
* **Jaeger JSON**: the ``{"data": [trace, ...]}`` export of Jaeger's UI and HTTP API, or one
  bare trace object; span events are Jaeger logs whose ``event`` field is the event name.
* the SDK's **console exporter** output (``ConsoleSpanExporter``: one pretty-printed span
  object after another, the program's own output between them), read by
  :mod:`~otel_loopguard.analyze.console_reader`.
* any of these gzip-compressed (magic bytes), from a file or from stdin (``-``).

OTLP JSON encodes ids as hex (the OTLP spec's deviation from the protobuf JSON mapping);
a generic protobuf JSON printer (``MessageToJson``) writes them as base64 instead. Both are
accepted: a 24-character trace id or 12-character span id that is not hex is read as
base64. Enum values are accepted as integers (OTLP) or names (``SPAN_KIND_CLIENT``), keys in
lowerCamelCase or as the proto's snake_case field names.

Memory: JSON lines are read line by line; one big document is walked with
:class:`~otel_loopguard.analyze.jsonstream.JsonScanner`, holding one span at a time (one
trace at a time for Jaeger, whose processes follow the spans). When an OTLP ``resource``
comes after its ``scopeSpans`` in a streamed document, those spans carry no resource
attributes; protobuf printers (Collector, SDKs) always write the resource first.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import dataclasses
import json
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from otel_loopguard.analyze import console_reader
from otel_loopguard.analyze.jsonstream import JsonScanner, JsonSyntaxError
from otel_loopguard.analyze.sources import (
    READ_ERRORS,
    InputError,
    describe_read_error,
    display_name,
)
from otel_loopguard.spans.view import SpanEventView, SpanView

# the longest line parsed whole as a JSON-lines record; from a longer line on, the input is
# walked as (concatenated) documents, so one huge line never has to fit in memory twice
SNIFF_LINE_CHARS = 8 << 20
# spans between two progress reports
_PROGRESS_SPANS = 4096

_SPAN_KINDS = {0: "internal", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
_STATUS_CODES = {0: "unset", 1: "ok", 2: "error"}
_HEX = frozenset("0123456789abcdefABCDEF")
_NO_STATUS: dict[str, Any] = {}


@dataclass
class ReadStats:
    """What a reader saw, for the report's summary and for progress lines."""

    spans: int = 0
    skipped_spans: int = 0  # spans without usable trace/span ids
    documents: int = 0


# -- ids, numbers, attribute values ------------------------------------------------------------


def normalize_id(raw: Any, hex_len: int) -> str | None:
    """A lower-case hex id of ``hex_len`` digits from hex (any case, short) or base64."""
    if not isinstance(raw, str) or not raw:
        return None
    cached = _ID_CACHE.get(raw)
    if cached is not None and len(cached) == hex_len:
        return cached
    if len(raw) <= hex_len and _HEX.issuperset(raw):
        value = raw.lower().rjust(hex_len, "0")
    else:
        try:
            decoded = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            return None
        if len(decoded) != hex_len // 2:
            return None
        value = decoded.hex()
    if value.strip("0") == "":
        return None
    if len(_ID_CACHE) >= _ID_CACHE_SIZE:
        _ID_CACHE.clear()
    _ID_CACHE[raw] = value
    return value


# a trace id is repeated on every span of its trace, a parent id on every child: most ids
# are seen again shortly after, so their validation is skipped (bounded; cleared when full)
_ID_CACHE: dict[str, str] = {}
_ID_CACHE_SIZE = 8192


def _to_int(raw: Any) -> int:
    """An integer field (a time, a count, an enum) however it was written; 0 when it
    is no number at all or not a finite one."""
    if isinstance(raw, str):
        try:
            return int(raw)
        except ValueError:
            try:
                return _to_int(float(raw)) if raw else 0
            except ValueError:
                return 0
    if isinstance(raw, bool):
        return int(raw)
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float):
        return int(raw) if math.isfinite(raw) else 0
    return 0


#: OTLP's timestamps are unsigned 64-bit nanoseconds: a value outside is clamped into that
#: range (a time past it could not even become a float of seconds)
_MAX_NANOS = (1 << 64) - 1


def _nanos(value: int) -> int:
    """``value`` within OTLP's timestamp range."""
    if 0 <= value <= _MAX_NANOS:
        return value
    return 0 if value < 0 else _MAX_NANOS


def _to_nanos(raw: Any, unit: int = 1) -> int:
    """A time field (``unit`` nanoseconds each: 1000 for Jaeger's µs) as OTLP nanoseconds."""
    return _nanos(_to_int(raw) * unit)


def _to_float(raw: Any) -> float:
    if isinstance(raw, str):
        return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(raw) or float(
            raw
        )
    return float(raw)


def otlp_any_value(value: Any) -> Any:
    """Python value of an OTLP ``AnyValue`` JSON object (``{"stringValue": ...}`` etc.)."""
    if not isinstance(value, dict):
        return value
    for key, item in value.items():
        if key in ("stringValue", "string_value"):
            return item
        if key in ("intValue", "int_value"):
            return _to_int(item)
        if key in ("boolValue", "bool_value"):
            return bool(item)
        if key in ("doubleValue", "double_value"):
            return _to_float(item)
        if key in ("arrayValue", "array_value"):
            return [otlp_any_value(v) for v in (item or {}).get("values", ())]
        if key in ("kvlistValue", "kvlist_value"):
            return otlp_attributes((item or {}).get("values", ()))
        if key in ("bytesValue", "bytes_value"):
            try:
                return base64.b64decode(item)
            except (binascii.Error, ValueError, TypeError):
                return item
    return None


def otlp_attributes(items: Any) -> dict[str, Any]:
    """``[{"key": k, "value": AnyValue}, ...]`` as a dict."""
    out: dict[str, Any] = {}
    if not isinstance(items, list):
        return out
    for item in items:
        try:
            key = item["key"]
            value = item["value"]
            text = value.get("stringValue")  # the common case, without the generic walk
        except (KeyError, TypeError, AttributeError):
            if isinstance(item, dict) and isinstance(item.get("key"), str):
                out[item["key"]] = otlp_any_value(item.get("value"))
            continue
        if not isinstance(key, str):
            continue
        out[key] = text if text is not None else otlp_any_value(value)
    return out


def _enum(raw: Any, table: dict[int, str], prefix: str) -> str:
    if type(raw) is int:
        return table.get(raw, table[0])
    if isinstance(raw, str) and not raw.lstrip("-").isdigit():
        name = raw.upper()
        return name[len(prefix) :].lower() if name.startswith(prefix) else name.lower()
    return table.get(_to_int(raw), table[0])


def _get(obj: dict[str, Any], camel: str, snake: str) -> Any:
    value = obj.get(camel)
    return obj.get(snake) if value is None else value


# -- OTLP ------------------------------------------------------------------------------------


# what converting a span of an unexpected shape can raise; such a span is skipped and counted
_MALFORMED = (TypeError, ValueError, AttributeError, KeyError, OverflowError)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def otlp_span(
    span: Any, resource: dict[str, Any], scope: str | None, stats: ReadStats
) -> SpanView | None:
    """One OTLP JSON ``Span`` as a view; ``None`` (counted as skipped) when it has no usable
    ids or a shape that cannot be read.

    Spans as exporters write them (camelCase keys, lower-case hex ids, integer enums, string
    attribute values) take :func:`_canonical_otlp_span`; anything else, or anything that
    path is unsure of, is read by :func:`_otlp_span`, which accepts every variant. Both give
    the same view for the same span (``tests/analyze/test_readers.py`` compares them).
    """
    try:
        view = _canonical_otlp_span(span, resource, scope)
    except _MALFORMED:
        view = None
    if view is not None:
        stats.spans += 1
        return view
    try:
        return _otlp_span(span, resource, scope, stats)
    except _MALFORMED:
        stats.skipped_spans += 1
        return None


def _canonical_id(raw: Any, hex_len: int) -> str | None:
    """:func:`normalize_id`, with an id seen before (a trace id on every span of its trace,
    a parent id on every sibling) answered by one dict lookup, and an id already in the
    form it returns (lower-case hex of the full length, not all zeros) by one round trip
    through bytes in C instead of the character checks."""
    if raw.__class__ is str:
        cached = _ID_CACHE.get(raw)
        if cached is not None and len(cached) == hex_len:
            return cached
        if len(raw) == hex_len:
            try:
                canonical = bytes.fromhex(raw).hex() == raw and raw != _ZERO_IDS[hex_len]
            except ValueError:
                canonical = False
            if canonical:
                if len(_ID_CACHE) >= _ID_CACHE_SIZE:
                    _ID_CACHE.clear()
                _ID_CACHE[raw] = raw
                return raw  # type: ignore[no-any-return]
    return normalize_id(raw, hex_len)


_ZERO_IDS = {16: "0" * 16, 32: "0" * 32}


def _canonical_attributes(items: Any) -> dict[str, Any] | None:
    """``otlp_attributes`` for a list of ``{"key": str, "value": {"stringValue"|"intValue":
    ...}}``; ``None`` when an item has another shape (the generic reader decides then)."""
    out: dict[str, Any] = {}
    if items is None:
        return out
    if items.__class__ is not list:
        return None
    for item in items:
        key = item["key"]
        value = item["value"]
        if key.__class__ is not str or len(value) != 1:
            return None
        text = value.get("stringValue")
        if text is None:
            number = value.get("intValue")
            if number.__class__ is not str:
                return None
            text = int(number)  # ValueError: not canonical, the generic reader decides
        out[key] = text
    return out


def _canonical_otlp_span(span: Any, resource: dict[str, Any], scope: str | None) -> SpanView | None:
    """A view of a span in the shape exporters write, or ``None`` when it is not in it.

    Builds exactly what :func:`_otlp_span` would (same ids, numbers, attributes), at a
    third of its cost: no snake_case or enum-name alternatives tried, integer enums and
    decimal-string times converted directly, the view built without keyword arguments.
    """
    if span.__class__ is not dict:
        return None
    get = span.get
    trace_id = _canonical_id(get("traceId"), 32)
    span_id = _canonical_id(get("spanId"), 16)
    name = get("name")
    start = get("startTimeUnixNano")
    end = get("endTimeUnixNano")
    if (
        trace_id is None
        or span_id is None
        or name.__class__ is not str
        or start.__class__ is not str
        or end.__class__ is not str
    ):
        return None
    parent = get("parentSpanId")
    if parent is None:
        parent = get("parent_span_id")
    kind = _SPAN_KINDS.get(get("kind", 0))
    attributes = _canonical_attributes(get("attributes"))
    if kind is None or attributes is None:
        return None
    status = get("status")
    if status:
        code = _STATUS_CODES.get(status.get("code", 0))
        if code is None:
            return None
        description = status.get("message") or None
    else:
        code, description = "unset", None
    raw_events = get("events")
    return _new_view(
        name,
        trace_id,
        span_id,
        _canonical_id(parent, 16) if parent else None,
        kind,
        _nanos(int(start)),
        _nanos(int(end)),
        attributes,
        code,
        description,
        _otlp_events(raw_events) if raw_events else (),
        resource,
        scope,
    )


def _otlp_events(raw_events: Any) -> list[SpanEventView]:
    return [
        SpanEventView(
            str(event.get("name", "")),
            otlp_attributes(event.get("attributes")),
            _to_nanos(_get(event, "timeUnixNano", "time_unix_nano")) or None,
        )
        for event in raw_events
        if isinstance(event, dict)
    ]


# SpanView's fields in the order ``_canonical_otlp_span`` passes them; keyword arguments
# cost as much as the rest of the span, so they are used only if the dataclass changes
_VIEW_FIELDS = (
    "name",
    "trace_id",
    "span_id",
    "parent_span_id",
    "kind",
    "start_time_unix_nano",
    "end_time_unix_nano",
    "attributes",
    "status_code",
    "status_description",
    "events",
    "resource_attributes",
    "scope_name",
)


def _view_by_keywords(*values: Any) -> SpanView:
    return SpanView(**dict(zip(_VIEW_FIELDS, values, strict=True)))


_new_view: Callable[..., SpanView] = (
    SpanView
    if tuple(f.name for f in dataclasses.fields(SpanView))[: len(_VIEW_FIELDS)] == _VIEW_FIELDS
    else _view_by_keywords
)


def _otlp_span(
    span: Any, resource: dict[str, Any], scope: str | None, stats: ReadStats
) -> SpanView | None:
    if not isinstance(span, dict):
        stats.skipped_spans += 1
        return None
    trace_id = normalize_id(_get(span, "traceId", "trace_id"), 32)
    span_id = normalize_id(_get(span, "spanId", "span_id"), 16)
    if trace_id is None or span_id is None:
        stats.skipped_spans += 1
        return None
    status = span.get("status") or _NO_STATUS
    raw_events = span.get("events")
    name = span.get("name")
    view = SpanView(
        name=name if isinstance(name, str) else ("" if name is None else str(name)),
        kind=_enum(span.get("kind", 0), _SPAN_KINDS, "SPAN_KIND_"),
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=normalize_id(_get(span, "parentSpanId", "parent_span_id"), 16),
        start_time_unix_nano=_to_nanos(_get(span, "startTimeUnixNano", "start_time_unix_nano")),
        end_time_unix_nano=_to_nanos(_get(span, "endTimeUnixNano", "end_time_unix_nano")),
        attributes=otlp_attributes(span.get("attributes")),
        status_code=_enum(status.get("code", 0), _STATUS_CODES, "STATUS_CODE_"),
        status_description=status.get("message") or None,
        events=_otlp_events(raw_events) if raw_events else (),
        resource_attributes=resource,
        scope_name=str(scope) if scope else None,
    )
    stats.spans += 1
    return view


def _otlp_scope(raw: Any) -> str | None:
    name = raw.get("name") if isinstance(raw, dict) else None
    return str(name) if name else None


def _otlp_resource(raw: Any) -> dict[str, Any]:
    return otlp_attributes(raw.get("attributes")) if isinstance(raw, dict) else {}


_SCOPE_SPANS_KEYS = ("scopeSpans", "scope_spans", "instrumentationLibrarySpans")
# Grafana Tempo's trace-by-id API: ``/api/traces/{id}`` names the resource spans
# ``batches``; ``/api/v2/traces/{id}`` wraps a whole ``TracesData`` in ``trace``
_TEMPO_BATCHES = "batches"
_TEMPO_TRACE = "trace"
_RESOURCE_SPANS_KEYS = ("resourceSpans", "resource_spans", _TEMPO_BATCHES)
_SCOPE_KEYS = ("scope", "instrumentationLibrary")


def otlp_request_spans(document: dict[str, Any], stats: ReadStats) -> list[SpanView]:
    """Spans of one parsed ``ExportTraceServiceRequest``."""
    views: list[SpanView] = []
    resource_spans = _get(document, "resourceSpans", "resource_spans")
    if resource_spans is None:
        resource_spans = document.get(_TEMPO_BATCHES)
    if resource_spans is None:
        return views
    if not isinstance(resource_spans, list):
        raise InputError("resourceSpans is not a list")
    for block in resource_spans:
        if not isinstance(block, dict):
            continue
        resource = _otlp_resource(block.get("resource"))
        for key in _SCOPE_SPANS_KEYS:
            for scope_block in _list(block.get(key)):
                if not isinstance(scope_block, dict):
                    continue
                scope = _otlp_scope(
                    scope_block.get("scope") or scope_block.get("instrumentationLibrary")
                )
                for span in _list(scope_block.get("spans")):
                    view = otlp_span(span, resource, scope, stats)
                    if view is not None:
                        views.append(view)
    return views


# -- Jaeger ----------------------------------------------------------------------------------

# tags Jaeger's OTLP translation adds for fields that OTLP keeps outside the attributes
_JAEGER_KIND = "span.kind"
_JAEGER_STATUS = ("otel.status_code", "otel.status_description", "error")
_JAEGER_SCOPE = (
    "otel.scope.name",
    "otel.scope.version",
    "otel.library.name",
    "otel.library.version",
)
_JAEGER_DROP = ("internal.span.format", "w3c.tracestate")
# OTLP array attributes that Jaeger stores as a JSON string; the mapping wants the list back
_JAEGER_JSON_ARRAYS = frozenset({"gen_ai.response.finish_reasons", "llm.finish_reasons"})


def _jaeger_tag_value(tag: dict[str, Any]) -> Any:
    value = tag.get("value")
    kind = str(tag.get("type", "string")).lower()
    try:
        if kind == "int64":
            return _to_int(value)
        if kind == "float64":
            return _to_float(value)
        if kind == "bool":
            return value if isinstance(value, bool) else str(value).lower() == "true"
        if kind == "binary" and isinstance(value, str):
            return base64.b64decode(value)
    except (ValueError, TypeError, binascii.Error):
        return value
    return value


def jaeger_tags(tags: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for tag in tags or ():
        if isinstance(tag, dict) and isinstance(tag.get("key"), str):
            out[tag["key"]] = _jaeger_tag_value(tag)
    return out


def _jaeger_parent(span: dict[str, Any], trace_id: str) -> str | None:
    references = span.get("references") or ()
    for wanted in ("CHILD_OF", "FOLLOWS_FROM"):
        for ref in references:
            if not isinstance(ref, dict) or str(ref.get("refType", "")).upper() != wanted:
                continue
            if normalize_id(ref.get("traceID"), 32) in (trace_id, None):
                return normalize_id(ref.get("spanID"), 16)
    return normalize_id(span.get("parentSpanID"), 16)


def jaeger_span(span: Any, processes: dict[str, Any], stats: ReadStats) -> SpanView | None:
    """One Jaeger span as a view; tags that carry OTLP fields go back to those fields.
    ``None`` (counted as skipped) without usable ids or with a shape that cannot be read."""
    try:
        return _jaeger_span(span, processes, stats)
    except _MALFORMED:
        stats.skipped_spans += 1
        return None


def _jaeger_span(span: Any, processes: dict[str, Any], stats: ReadStats) -> SpanView | None:
    if not isinstance(span, dict):
        stats.skipped_spans += 1
        return None
    trace_id = normalize_id(span.get("traceID"), 32)
    span_id = normalize_id(span.get("spanID"), 16)
    if trace_id is None or span_id is None:
        stats.skipped_spans += 1
        return None
    tags = jaeger_tags(span.get("tags"))
    kind = str(tags.pop(_JAEGER_KIND, "internal") or "internal").lower()
    status_tag = str(tags.pop("otel.status_code", "") or "").lower()
    description = tags.pop("otel.status_description", None)
    errored = tags.pop("error", False) in (True, "true")
    status = status_tag or ("error" if errored else "unset")
    scope = tags.get("otel.scope.name") or tags.get("otel.library.name")
    for key in (*_JAEGER_SCOPE, *_JAEGER_DROP):
        tags.pop(key, None)
    for key in tags.keys() & _JAEGER_JSON_ARRAYS:
        value = tags[key]
        if isinstance(value, str) and value.startswith("["):
            with contextlib.suppress(ValueError):
                tags[key] = json.loads(value)
    events = []
    for log in span.get("logs") or ():
        if not isinstance(log, dict):
            continue
        fields = jaeger_tags(log.get("fields"))
        name = fields.pop("event", None) or "log"
        events.append(
            SpanEventView(str(name), fields, _to_nanos(log.get("timestamp"), 1000) or None)
        )
    process = span.get("process")
    if not isinstance(process, dict):
        process = processes.get(span.get("processID", "")) or {}
    resource = jaeger_tags(process.get("tags"))
    if process.get("serviceName"):
        resource["service.name"] = process["serviceName"]
    start_ns = _to_nanos(span.get("startTime"), 1000)
    stats.spans += 1
    return SpanView(
        name=str(span.get("operationName", "")),
        kind=kind,
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=_jaeger_parent(span, trace_id),
        start_time_unix_nano=start_ns,
        end_time_unix_nano=_nanos(start_ns + _to_int(span.get("duration")) * 1000),
        attributes=tags,
        status_code=status,
        status_description=str(description) if description else None,
        events=events,
        resource_attributes=resource,
        scope_name=str(scope) if scope else None,
    )


def jaeger_trace_spans(trace: Any, stats: ReadStats) -> list[SpanView]:
    if not isinstance(trace, dict):
        raise InputError("a Jaeger trace is not an object")
    processes = trace.get("processes") or {}
    if not isinstance(processes, dict):
        processes = {}
    views = []
    for span in _list(trace.get("spans")):
        view = jaeger_span(span, processes, stats)
        if view is not None:
            views.append(view)
    return views


# -- documents -----------------------------------------------------------------------------


def document_spans(document: Any, stats: ReadStats) -> Iterator[SpanView]:
    """Spans of one parsed JSON document of any supported kind; InputError if not traces."""
    for batch in document_batches(document, stats):
        yield from batch


def document_batches(document: Any, stats: ReadStats) -> Iterator[list[SpanView]]:
    """:func:`document_spans` a request or a Jaeger trace at a time: the consumer loops over
    a list instead of resuming a generator per span."""
    if not isinstance(document, dict):
        raise InputError(f"not trace data: a JSON {type(document).__name__}, not an object")
    stats.documents += 1
    wrapped = document.get(_TEMPO_TRACE)
    if isinstance(wrapped, dict) and not any(key in document for key in _RESOURCE_SPANS_KEYS):
        document = wrapped
    if any(key in document for key in _RESOURCE_SPANS_KEYS):
        yield otlp_request_spans(document, stats)
    elif isinstance(document.get("data"), list):
        for trace in document["data"]:
            yield jaeger_trace_spans(trace, stats)
    elif isinstance(document.get("spans"), list) and "traceID" in document:
        yield jaeger_trace_spans(document, stats)
    elif console_reader.is_console_span(document):  # one span of the SDK's console exporter
        view = console_reader.console_span(document, stats)
        if view is not None:
            yield [view]
    else:
        keys = ", ".join(sorted(document)[:4]) or "no keys"
        raise InputError(
            "not trace data: expected OTLP 'resourceSpans' (Tempo: 'batches'), or Jaeger"
            f" 'data', found {keys}"
        )


def _stream_otlp_resource_spans(scanner: JsonScanner, stats: ReadStats) -> Iterator[SpanView]:
    for _ in scanner.array_items():
        if scanner.peek() != "{":
            scanner.value()
            continue
        resource: dict[str, Any] = {}
        for key in scanner.object_keys():
            if key == "resource":
                resource = _otlp_resource(scanner.value())
            elif key in _SCOPE_SPANS_KEYS:
                if scanner.peek() != "[":
                    scanner.value()
                    continue
                for _ in scanner.array_items():
                    if scanner.peek() != "{":
                        scanner.value()
                        continue
                    scope: str | None = None
                    for scope_key in scanner.object_keys():
                        if scope_key in _SCOPE_KEYS:
                            scope = _otlp_scope(scanner.value())
                        elif scope_key == "spans" and scanner.peek() == "[":
                            for _ in scanner.array_items():
                                view = otlp_span(scanner.value(), resource, scope, stats)
                                if view is not None:
                                    yield view
                        else:
                            scanner.value()
            else:
                scanner.value()


def stream_documents(scanner: JsonScanner, stats: ReadStats) -> Iterator[SpanView]:
    """Spans of one or more concatenated JSON documents, walked without loading them."""
    while scanner.peek():
        if scanner.peek() != "{":
            raise InputError("not trace data: the input is not a JSON object")
        stats.documents += 1
        rest: dict[str, Any] = {}
        found = False
        for key in scanner.object_keys():
            if key in _RESOURCE_SPANS_KEYS and scanner.peek() == "[":
                found = True
                yield from _stream_otlp_resource_spans(scanner, stats)
            elif key == "data" and scanner.peek() == "[":
                found = True
                for _ in scanner.array_items():  # one Jaeger trace at a time
                    yield from jaeger_trace_spans(scanner.value(), stats)
            else:
                rest[key] = scanner.value()
        if not found:
            stats.documents -= 1
            yield from document_spans(rest, stats)


def _iter_json_lines(
    text: TextIO, first_line: str, stats: ReadStats
) -> Iterator[Sequence[SpanView]]:
    loads = json.loads
    number = 1
    line = first_line
    while True:
        if line.strip():
            try:
                document = loads(line)
            except ValueError as exc:
                truncated = not line.endswith("\n")
                reason = "truncated last line" if truncated else f"invalid JSON ({exc})"
                raise InputError(f"line {number}: {reason}") from None
            try:
                yield from document_batches(document, stats)
            except InputError as exc:
                raise InputError(f"line {number}: {exc}") from None
        line = text.readline(SNIFF_LINE_CHARS)
        if not line:
            return
        number += 1
        if len(line) == SNIFF_LINE_CHARS and not line.endswith("\n"):
            yield from _stream(text, line, stats, f"line {number}: ")
            return


def read_text(text: TextIO, stats: ReadStats) -> Iterator[Sequence[SpanView]]:
    """Spans from one decoded input, format detected from its content, in batches (a
    JSON-lines record or a Jaeger trace at a time; one span at a time from a streamed
    document)."""
    first = text.readline(SNIFF_LINE_CHARS)
    while first and not first.strip():
        first = text.readline(SNIFF_LINE_CHARS)
    if not first:
        raise InputError("empty input")
    stripped = first.lstrip()
    if stripped[0] not in "{[":
        # the SDK's console exporter after the program's own output, or not trace data
        yield from console_reader.console_text_batches(text, (first,), stats)
        return
    if stripped.rstrip() == "{":  # pretty-printed: a console-exported span?
        second = text.readline(SNIFF_LINE_CHARS)
        if console_reader.starts_console_output(first, second):
            yield from console_reader.console_text_batches(text, (first, second), stats)
            return
        first += second
    whole_line = first.endswith("\n") or len(first) < SNIFF_LINE_CHARS
    if whole_line:
        try:
            json.loads(first)
        except ValueError:
            pass
        else:
            yield from _iter_json_lines(text, first, stats)
            return
    # pretty-printed or very long: walk it as one (or several concatenated) documents
    yield from _stream(text, first, stats, "")


def _stream(
    text: TextIO, prefix: str, stats: ReadStats, where: str
) -> Iterator[Sequence[SpanView]]:
    try:
        for view in stream_documents(JsonScanner(text, prefix=prefix), stats):
            yield (view,)
    except JsonSyntaxError as exc:
        raise InputError(f"{where}invalid JSON: {exc}") from None


def read_spans(
    paths: Iterable[str],
    stats: ReadStats | None = None,
    on_position: Callable[[str, int], None] | None = None,
) -> Iterator[SpanView]:
    """Every span of every input, in file order; raises :class:`InputError` on bad input.

    ``on_position(path, raw_bytes_consumed)`` is called now and then for progress.
    """
    for batch in read_span_batches(paths, stats, on_position):
        yield from batch


def read_span_batches(
    paths: Iterable[str],
    stats: ReadStats | None = None,
    on_position: Callable[[str, int], None] | None = None,
) -> Iterator[Sequence[SpanView]]:
    """:func:`read_spans` in the batches the inputs hold them (see :func:`read_text`)."""
    from otel_loopguard.analyze.sources import open_text

    stats = stats if stats is not None else ReadStats()
    for path in paths:
        name = display_name(path)
        with open_text(path) as (text, raw):
            try:
                count = 0
                next_report = _PROGRESS_SPANS
                for batch in read_text(text, stats):
                    count += len(batch)
                    if on_position is not None and count >= next_report:
                        next_report = count + _PROGRESS_SPANS
                        on_position(path, _tell(raw))
                    yield batch
            except InputError as exc:
                raise InputError(f"{name}: {exc}") from None
            except READ_ERRORS as exc:
                raise InputError(f"{name}: {describe_read_error(exc)}") from None
            except RecursionError:
                raise InputError(f"{name}: JSON nested too deeply") from None


def _tell(raw: Any) -> int:
    try:
        return int(raw.tell())
    except (OSError, ValueError, AttributeError):
        return -1
