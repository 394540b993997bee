"""OTLP trace requests (protobuf or JSON, maybe gzip) into span views, bounded.

Protobuf is decoded with the ``opentelemetry-proto`` classes (upb: the parse is C) and read
field by field into :class:`~otel_loopguard.spans.view.SpanView` (hex ids, lower-case kind
and status words), the same view ``analyze`` makes from saved OTLP JSON, so the follower
cannot tell a live span from a saved one. JSON goes through ``analyze``'s own OTLP reader.

Everything a sender controls is bounded before it costs memory: a gzip body is inflated
at most to ``max_bytes`` (a small bomb cannot become gigabytes), and a span without a
usable trace or span id is skipped and counted, never an error for the whole request.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from typing import Any

from google.protobuf.message import DecodeError as _ProtobufError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_loopguard.spans.view import SpanEventView, SpanView

_KINDS = ("internal", "internal", "server", "client", "producer", "consumer")
_STATUS = ("unset", "ok", "error")


class MalformedRequest(ValueError):
    """The body is not an OTLP trace request (bad protobuf, bad JSON, broken gzip)."""


class TooLarge(ValueError):
    """The body, or what it inflates to, is over the size limit."""


class Decoded:
    """The spans of one request, and how many were skipped for unusable ids."""

    __slots__ = ("rejected", "views")

    def __init__(self, views: list[SpanView], rejected: int) -> None:
        self.views = views
        self.rejected = rejected


def inflate(body: bytes, encoding: str, max_bytes: int) -> bytes:
    """The body without its ``Content-Encoding`` (``gzip``/``deflate``/none), at most
    ``max_bytes`` long once inflated."""
    encoding = encoding.strip().lower()
    if not encoding or encoding == "identity":
        return body
    if encoding not in ("gzip", "deflate"):
        raise MalformedRequest(f"unsupported Content-Encoding {encoding!r}")
    # wbits: 16 + MAX_WBITS reads a gzip header, MAX_WBITS a zlib one
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS)
    try:
        data = inflater.decompress(body, max_bytes + 1)
    except zlib.error as exc:
        raise MalformedRequest(f"broken {encoding} body: {exc}") from None
    if len(data) > max_bytes:
        raise TooLarge(f"body inflates to more than {max_bytes} bytes")
    if not inflater.eof:
        raise MalformedRequest(f"truncated {encoding} body")
    return data


def success_response(rejected: int, json_body: bool) -> bytes:
    """The ``ExportTraceServiceResponse`` of an accepted request: empty, or the partial
    success naming how many spans were rejected (unusable trace or span ids)."""
    if json_body:
        if not rejected:
            return b"{}"
        return json.dumps(
            {"partialSuccess": {"rejectedSpans": str(rejected), "errorMessage": _REJECTED}}
        ).encode()
    if not rejected:
        return b""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTracePartialSuccess,
        ExportTraceServiceResponse,
    )

    partial = ExportTracePartialSuccess(rejected_spans=rejected, error_message=_REJECTED)
    return ExportTraceServiceResponse(partial_success=partial).SerializeToString()


_REJECTED = "spans without a 16-byte trace id and an 8-byte span id were rejected"


def decode_protobuf(data: bytes) -> Decoded:
    try:
        request = ExportTraceServiceRequest.FromString(data)
    except (_ProtobufError, ValueError) as exc:  # ValueError: invalid UTF-8 in a string
        raise MalformedRequest(f"not an OTLP trace request: {type(exc).__name__}") from None
    return decode_message(request)


def decode_message(request: ExportTraceServiceRequest) -> Decoded:
    """Span views of a parsed request (the gRPC receiver gets it parsed already)."""
    views: list[SpanView] = []
    rejected = 0
    append = views.append
    for block in request.resource_spans:
        resource = _attributes(block.resource.attributes)
        for scope_block in block.scope_spans:
            scope = scope_block.scope.name or None
            for span in scope_block.spans:
                trace_id = span.trace_id
                span_id = span.span_id
                if len(trace_id) != 16 or len(span_id) != 8:
                    rejected += 1
                    continue
                parent = span.parent_span_id
                status = span.status
                code = status.code
                kind = span.kind
                events = span.events
                append(
                    SpanView(
                        span.name,
                        trace_id.hex(),
                        span_id.hex(),
                        parent.hex() if len(parent) == 8 else None,
                        _KINDS[kind] if 0 <= kind < 6 else "internal",
                        span.start_time_unix_nano or None,
                        span.end_time_unix_nano or None,
                        _attributes(span.attributes),
                        _STATUS[code] if 0 <= code < 3 else "unset",
                        status.message or None,
                        tuple(
                            SpanEventView(e.name, _attributes(e.attributes), e.time_unix_nano)
                            for e in events
                        )
                        if events
                        else (),
                        resource,
                        scope,
                    )
                )
    return Decoded(views, rejected)


def decode_json(data: bytes) -> Decoded:
    from otel_loopguard.analyze.readers import ReadStats, otlp_request_spans

    try:
        document = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise MalformedRequest(f"not JSON: {type(exc).__name__}") from None
    if not isinstance(document, dict):
        raise MalformedRequest("not an OTLP trace request: the JSON is not an object")
    stats = ReadStats()
    try:
        views = otlp_request_spans(document, stats)
    except Exception as exc:  # any shape of JSON: an answer of 400, never a crash
        raise MalformedRequest(f"not an OTLP trace request: {exc}") from None
    return Decoded(views, stats.skipped_spans)


def _attributes(pairs: Any) -> Mapping[str, Any]:
    if not pairs:
        return {}
    attributes: dict[str, Any] = {}
    for kv in pairs:
        value = kv.value
        text = value.string_value  # most attributes: one read (a non-empty string)
        attributes[kv.key] = text if text else _value(value)
    return attributes


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind is None:
        return None
    if kind == "array_value":
        return [_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind)
