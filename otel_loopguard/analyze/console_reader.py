"""The OpenTelemetry SDK's ``ConsoleSpanExporter`` output, read as trace data.

``opentelemetry-instrument --traces_exporter console python agent.py > run.txt`` (or a
``ConsoleSpanExporter`` added in code) prints every span as the SDK's ``span.to_json()``: a
pretty-printed JSON object (``name``, ``context.trace_id``/``span_id`` as ``0x`` hex,
``parent_id``, ``kind`` as ``SpanKind.CLIENT``, ISO ``start_time``/``end_time``,
``status.status_code``, ``attributes``, ``events`` with ISO ``timestamp``s, ``resource``),
one after the other. The program's own output is usually in the same file: lines outside
those objects are skipped. An object starts at a line that is exactly ``{`` and ends at the
next line that is exactly ``}`` (the exporter indents everything inside); objects that are
not spans (the console metrics or logs exporters') are skipped. Memory: one span at a time.

Kept out of the compiled readers (``readers.py`` only hands over to it).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

from otel_loopguard.analyze.sources import InputError
from otel_loopguard.spans.view import SpanEventView, SpanView

#: the second line of a span as the console exporter prints it
_SECOND_LINE = '    "name": '
#: the longest span object kept while looking for its end (a bound, not a format limit)
_MAX_OBJECT_CHARS = 64 << 20
_KINDS = {
    "SpanKind.INTERNAL": "internal",
    "SpanKind.SERVER": "server",
    "SpanKind.CLIENT": "client",
    "SpanKind.PRODUCER": "producer",
    "SpanKind.CONSUMER": "consumer",
}
_STATUS = {"UNSET": "unset", "OK": "ok", "ERROR": "error"}


def starts_console_output(first: str, second: str) -> bool:
    """Whether an input's first two lines are the start of a console-exported span."""
    return first.strip() == "{" and second.startswith(_SECOND_LINE)


def is_console_span(document: Any) -> bool:
    """A parsed object that is one console-exported span."""
    return (
        isinstance(document, dict)
        and isinstance(document.get("context"), dict)
        and "trace_id" in document["context"]
        and "name" in document
        and "start_time" in document
    )


def console_text_batches(text: TextIO, lines: Sequence[str], stats: Any) -> Iterator[Sequence[Any]]:
    """The spans of console exporter output (after ``lines`` already read from ``text``),
    one batch per span; :class:`InputError` when none is found."""
    found = False
    buffer: list[str] | None = None
    size = 0

    def all_lines() -> Iterator[str]:
        yield from lines
        yield from text

    for line in all_lines():
        bare = line.rstrip("\r\n")
        if buffer is None:
            if bare == "{":
                buffer, size = [line], len(line)
            continue  # the program's own output between spans
        buffer.append(line)
        size += len(line)
        if bare == "}":
            try:
                document = json.loads("".join(buffer))
            except ValueError:
                document = None
            buffer = None
            if is_console_span(document):
                view = console_span(document, stats)
                if view is not None:
                    found = True
                    yield (view,)
        elif size > _MAX_OBJECT_CHARS:
            buffer = None
    if not found:
        raise InputError(
            "not JSON trace data (expected an OTLP or Jaeger JSON export, or the spans "
            "of the SDK's console exporter)"
        )


def console_span(document: dict[str, Any], stats: Any) -> SpanView | None:
    """One console-exported span as a :class:`SpanView` (``None``: no usable ids)."""
    context = document.get("context") or {}
    trace_id = _hex_id(context.get("trace_id"), 32)
    span_id = _hex_id(context.get("span_id"), 16)
    if trace_id is None or span_id is None:
        stats.skipped_spans += 1
        return None
    raw_status = document.get("status")
    status: dict[str, Any] = raw_status if isinstance(raw_status, dict) else {}
    resource = document.get("resource")
    attributes = document.get("attributes")
    raw_events = document.get("events")
    events: list[Any] = raw_events if isinstance(raw_events, list) else []
    view = SpanView(
        name=str(document.get("name") or ""),
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=_hex_id(document.get("parent_id"), 16),
        kind=_KINDS.get(str(document.get("kind")), "internal"),
        start_time_unix_nano=_nanoseconds(document.get("start_time")),
        end_time_unix_nano=_nanoseconds(document.get("end_time")),
        attributes=_attributes(attributes),
        status_code=_STATUS.get(str(status.get("status_code", "UNSET")), "unset"),
        status_description=status.get("description") or None,
        events=[
            SpanEventView(
                str(event.get("name", "")),
                _attributes(event.get("attributes")),
                _nanoseconds(event.get("timestamp")) or None,
            )
            for event in events
            if isinstance(event, dict)
        ],
        resource_attributes=_attributes(
            resource.get("attributes") if isinstance(resource, dict) else None
        ),
        scope_name=None,
    )
    stats.spans += 1
    return view


def _hex_id(raw: Any, length: int) -> str | None:
    if not isinstance(raw, str):
        return None
    value = raw[2:] if raw[:2].lower() == "0x" else raw
    if len(value) != length or not _is_hex(value) or int(value, 16) == 0:
        return None
    return value.lower()


def _is_hex(value: str) -> bool:
    try:
        int(value, 16)
    except ValueError:
        return False
    return True


def _nanoseconds(raw: Any) -> int:
    """``2025-01-02T03:04:05.123456Z`` (the SDK's ``ns_to_iso_str``) in Unix nanoseconds."""
    if not isinstance(raw, str) or not raw:
        return 0
    try:
        moment = datetime.datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return 0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    delta = moment - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


def _attributes(raw: Any) -> dict[str, Any]:
    """Attributes as printed (sequences as JSON arrays: lists, as the OTLP reader gives them)."""
    if not isinstance(raw, dict):
        return {}
    return {str(key): value for key, value in raw.items() if value is not None}
