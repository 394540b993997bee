"""Encode SDK spans as OTLP JSON, the format `otel-loopguard analyze` and Jaeger read.

OTLP's JSON mapping differs from protobuf's generic JSON mapping in two ways that matter:
trace and span ids are hex strings (not base64), and enums are integers. We encode with the
SDK's own protobuf encoder (so the structure is exactly what an OTLP exporter sends) and then
apply those two rules, rather than building the JSON by hand.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan

_ID_KEYS = frozenset({"traceId", "spanId", "parentSpanId"})


def spans_to_otlp_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """One ``ExportTraceServiceRequest`` as an OTLP JSON object."""
    message = encode_spans(spans)
    data = MessageToDict(message, use_integers_for_enums=True)
    _hex_ids(data)
    return data


def write_otlp_json(spans: Iterable[ReadableSpan], path: str | Path) -> Path:
    """Write spans as one OTLP JSON request object; returns the path."""
    target = Path(path)
    target.write_text(json.dumps(spans_to_otlp_json(list(spans))) + "\n", encoding="utf-8")
    return target


def _hex_ids(node: Any) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _ID_KEYS and isinstance(value, str):
                node[key] = base64.b64decode(value).hex()
            else:
                _hex_ids(value)
    elif isinstance(node, list):
        for item in node:
            _hex_ids(item)
