"""Readers: every supported export format yields the spans the SDK recorded, field by field."""

from __future__ import annotations

import base64
import contextlib
import io
import json
from pathlib import Path

import pytest
from google.protobuf.json_format import MessageToJson
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from otel_loopguard.analyze.jsonstream import JsonScanner, JsonSyntaxError
from otel_loopguard.analyze.readers import ReadStats, normalize_id, read_spans, stream_documents
from otel_loopguard.analyze.sources import InputError
from otel_loopguard.spans.otlp_json import spans_to_otlp_json
from otel_loopguard.spans.view import SpanView, from_readable_span

from .traces import (
    Recorder,
    agent_run,
    batches,
    gzip_file,
    jaeger_export,
    jsonl_text,
    write_otlp,
)


@pytest.fixture
def sdk_spans():
    recorder = Recorder()
    agent_run(recorder, "triage", [("search", {"q": "pricing"}, "no results")] * 2)
    agent_run(recorder, "billing", [("lookup", {"id": 7}, "ok")], failing_tool="lookup")
    return recorder.spans()


def _plain(value):
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, dict) or hasattr(value, "items"):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _comparable(view: SpanView, time_unit: int = 1) -> dict:
    return {
        "name": view.name,
        "trace_id": view.trace_id,
        "span_id": view.span_id,
        "parent_span_id": view.parent_span_id,
        "kind": view.kind,
        "start": view.start_time_unix_nano // time_unit,
        "end": view.end_time_unix_nano // time_unit,
        "attributes": _plain(view.attributes),
        "status": (view.status_code, view.status_description),
        "events": [(e.name, _plain(e.attributes)) for e in view.events],
        "resource": _plain(view.resource_attributes),
        "scope": view.scope_name,
    }


def _expected(spans, time_unit: int = 1) -> list[dict]:
    return [_comparable(from_readable_span(span), time_unit) for span in spans]


def _read(*paths) -> list[SpanView]:
    return list(read_spans([str(p) for p in paths]))


def test_otlp_json_object_matches_the_sdk_spans(tmp_path: Path, sdk_spans) -> None:
    path = write_otlp(tmp_path / "export.json", sdk_spans)
    got = [_comparable(v) for v in _read(path)]
    assert got == _expected(sdk_spans)
    assert {v["status"] for v in got} >= {("error", "404 not found"), ("unset", None)}


def test_pretty_printed_otlp_is_walked_in_small_chunks(tmp_path: Path, sdk_spans, monkeypatch):
    import otel_loopguard.analyze.jsonstream as jsonstream

    monkeypatch.setattr(jsonstream, "CHUNK_CHARS", 7)  # every value crosses chunk boundaries
    monkeypatch.setattr(JsonScanner.__init__, "__defaults__", ("", 7))
    path = write_otlp(tmp_path / "pretty.json", sdk_spans, indent=2)
    assert path.read_text().startswith("{\n")
    assert [_comparable(v) for v in _read(path)] == _expected(sdk_spans)


def test_protobuf_json_printer_output_with_base64_ids_is_accepted(tmp_path, sdk_spans) -> None:
    """MessageToJson writes base64 ids and enum names; OTLP JSON wants hex and integers."""
    text = MessageToJson(encode_spans(sdk_spans))
    assert "SPAN_KIND_INTERNAL" in text and "==" in text
    path = tmp_path / "protobuf.json"
    path.write_text(text)
    assert [_comparable(v) for v in _read(path)] == _expected(sdk_spans)


@pytest.mark.parametrize("indent", [None, 2], ids=["one-line", "pretty"])
@pytest.mark.parametrize("api", ["v1", "v2"])
def test_grafana_tempo_trace_api_answers_are_read(tmp_path, sdk_spans, api, indent) -> None:
    """What Tempo's ``/api/traces/{id}`` (resource spans named ``batches``) and
    ``/api/v2/traces/{id}`` (``TracesData`` under ``trace``) return, ids in base64."""
    request = json.loads(MessageToJson(encode_spans(sdk_spans)))
    document = {"batches": request.pop("resourceSpans")} if api == "v1" else {"trace": request}
    path = tmp_path / f"tempo-{api}.json"
    path.write_text(json.dumps(document, indent=indent))
    assert [_comparable(v) for v in _read(path)] == _expected(sdk_spans)


def test_json_lines_one_request_per_line(tmp_path: Path, sdk_spans) -> None:
    path = tmp_path / "collector.jsonl"
    path.write_text(jsonl_text(batches(sdk_spans, 2)))
    assert len(path.read_text().splitlines()) == (len(sdk_spans) + 1) // 2
    assert [_comparable(v) for v in _read(path)] == _expected(sdk_spans)


def test_jaeger_json_export(tmp_path: Path, sdk_spans) -> None:
    export = jaeger_export(sdk_spans)
    for trace in export["data"]:
        trace["spans"].reverse()  # Jaeger does not keep end order
    path = tmp_path / "jaeger.json"
    path.write_text(json.dumps(export, indent=1))
    views = {v.span_id: v for v in _read(path)}
    got = sorted((_comparable(v, 1000) for v in views.values()), key=lambda d: d["span_id"])
    expected = sorted(_expected(sdk_spans, 1000), key=lambda d: d["span_id"])
    for item in (*got, *expected):
        item.pop("end")  # Jaeger keeps microseconds: start + duration, compared below
    assert got == expected
    for span in sdk_spans:
        view = views[format(span.context.span_id, "016x")]
        duration_us = (view.end_time_unix_nano - view.start_time_unix_nano) // 1000
        assert duration_us == (span.end_time - span.start_time) // 1000


def test_jaeger_finish_reasons_array_comes_back_as_a_list(tmp_path: Path) -> None:
    recorder = Recorder()
    agent_run(recorder, "a", [("search", {}, "x")], tokens_per_turn=5)
    path = tmp_path / "jaeger.json"
    path.write_text(json.dumps(jaeger_export(recorder.spans())))
    chat = next(v for v in _read(path) if v.name.startswith("chat"))
    assert chat.attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]


def test_gzip_is_detected_by_magic_bytes_not_suffix(tmp_path: Path, sdk_spans) -> None:
    path = gzip_file(tmp_path / "export.data", jsonl_text(batches(sdk_spans, 3)))
    assert [_comparable(v) for v in _read(path)] == _expected(sdk_spans)


def test_several_inputs_are_read_in_order(tmp_path: Path, sdk_spans) -> None:
    first = write_otlp(tmp_path / "a.json", sdk_spans[:3])
    second = gzip_file(tmp_path / "b.json.gz", json.dumps(jaeger_export(sdk_spans[3:])))
    names = [v.name for v in _read(first, second)]
    assert names == [s.name for s in sdk_spans]


def test_all_otlp_any_value_kinds(tmp_path: Path) -> None:
    span = {
        "traceId": "5B8EFFF798038103D269B633813FC60C",  # the spec allows upper-case hex
        "spanId": "EEE19B7EC3C1B174",
        "parentSpanId": "",
        "name": "op",
        "kind": 3,
        "startTimeUnixNano": 1581452772000000321,  # numbers are accepted as well as strings
        "endTimeUnixNano": "1581452773000000789",
        "attributes": [
            {"key": "s", "value": {"stringValue": "x"}},
            {"key": "i", "value": {"intValue": "9007199254740993"}},
            {"key": "i2", "value": {"intValue": 5}},
            {"key": "d", "value": {"doubleValue": 2.5}},
            {"key": "nan", "value": {"doubleValue": "NaN"}},
            {"key": "b", "value": {"boolValue": False}},
            {
                "key": "a",
                "value": {"arrayValue": {"values": [{"stringValue": "p"}, {"intValue": "1"}]}},
            },
            {
                "key": "kv",
                "value": {"kvlistValue": {"values": [{"key": "k", "value": {"boolValue": True}}]}},
            },
            {"key": "by", "value": {"bytesValue": "aGk="}},
            {"key": "empty", "value": {}},
        ],
        "status": {"code": 1},
    }
    path = tmp_path / "one.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    (view,) = _read(path)
    assert view.trace_id == "5b8efff798038103d269b633813fc60c" and view.parent_span_id is None
    assert (view.kind, view.status_code) == ("client", "ok")
    assert view.start_time_unix_nano == 1581452772000000321
    assert view.end_time_unix_nano == 1581452773000000789
    attrs = view.attributes
    assert attrs["i"] == 9007199254740993 and attrs["i2"] == 5 and attrs["d"] == 2.5
    assert attrs["nan"] != attrs["nan"]
    assert (attrs["s"], attrs["b"], attrs["by"], attrs["empty"]) == ("x", False, b"hi", None)
    assert list(attrs["a"]) == ["p", 1] and attrs["kv"] == {"k": True}


def test_spans_without_ids_are_skipped_and_counted(tmp_path: Path) -> None:
    good = {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331"}
    bad = [{"traceId": "", "spanId": "b7ad6b7169203331"}, {"traceId": "zz", "spanId": "1"}, 7]
    path = tmp_path / "ids.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [*bad, good]}]}]}))
    stats = ReadStats()
    views = list(read_spans([str(path)], stats))
    assert [v.span_id for v in views] == ["b7ad6b7169203331"]
    assert (stats.spans, stats.skipped_spans) == (1, 3)


def test_normalize_id_reads_hex_short_hex_and_base64() -> None:
    assert normalize_id("ABCDEF", 16) == "0000000000abcdef"  # Jaeger drops leading zeros
    assert normalize_id("q83vASNFZ4k=", 16) == "abcdef0123456789"
    assert normalize_id("0" * 32, 32) is None  # the invalid all-zero id
    assert normalize_id("not an id!", 16) is None


def test_the_resource_that_follows_its_spans_is_not_known_to_them() -> None:
    """Documented limit of streaming: protobuf printers always write the resource first."""
    text = (
        '{"resourceSpans": [{"scopeSpans": [{"spans": [{'
        '"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331"}]}], '
        '"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "late"}}]}'
        "}]}"
    )
    (view,) = list(stream_documents(JsonScanner(io.StringIO(text)), ReadStats()))
    assert view.resource_attributes == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"resourceSpans": [{"scopeSpans": [{"spans": [{"a": 1}', "truncated"),
        ('{"resourceSpans": [1 2]}', "expected ',' or ']'"),
        ('{"resourceSpans": []', "truncated"),
        ('{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "ab\\u12', "truncated"),
    ],
)
def test_scanner_reports_broken_documents(text: str, message: str) -> None:
    with pytest.raises(JsonSyntaxError, match=message):
        list(stream_documents(JsonScanner(io.StringIO(text), chunk_chars=5), ReadStats()))


def test_scanner_does_not_cut_numbers_at_chunk_boundaries() -> None:
    text = '{"data": [{"traceID": "1", "spans": [], "n": 123456789012345}]}' + " " * 3
    for chunk in range(1, 20):
        scanner = JsonScanner(io.StringIO(text), chunk_chars=chunk)
        scanner.take("{")
        assert scanner.key() == "data"
        assert scanner.value() == [{"traceID": "1", "spans": [], "n": 123456789012345}]


def test_a_document_that_is_not_traces_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "metrics.json"
    path.write_text(json.dumps({"resourceMetrics": []}))
    with pytest.raises(InputError, match=r"not trace data.*resourceMetrics"):
        _read(path)


def test_json_lines_with_a_first_line_too_long_to_sniff_are_walked(
    tmp_path: Path, sdk_spans, monkeypatch
) -> None:
    import otel_loopguard.analyze.readers as readers

    monkeypatch.setattr(readers, "SNIFF_LINE_CHARS", 16)  # every line is "too long"
    path = tmp_path / "long-lines.jsonl"
    path.write_text(jsonl_text(batches(sdk_spans, 2)))
    stats = ReadStats()
    views = list(read_spans([str(path)], stats))
    assert [_comparable(v) for v in views] == _expected(sdk_spans)
    assert stats.documents == (len(sdk_spans) + 1) // 2


def test_a_huge_line_after_normal_ones_is_walked_not_loaded(
    tmp_path: Path, sdk_spans, monkeypatch
) -> None:
    import otel_loopguard.analyze.readers as readers

    first, rest = sdk_spans[:2], sdk_spans[2:]
    path = tmp_path / "mixed-lines.jsonl"
    path.write_text(jsonl_text([first]) + jsonl_text([rest]) + jsonl_text([first]))
    monkeypatch.setattr(readers, "SNIFF_LINE_CHARS", len(jsonl_text([first])) + 1)
    stats = ReadStats()
    views = list(read_spans([str(path)], stats))
    assert [_comparable(v) for v in views] == _expected([*first, *rest, *first])
    assert stats.documents == 3


def _variants(span: dict) -> list[dict]:
    """The span, and the span with one field in each shape an exporter or a hand-written
    export may use, valid or not."""
    changes = {
        "traceId": [span["traceId"].upper(), span["traceId"][4:], "", None, 7, ["x"], "zz"],
        "spanId": [
            span["spanId"].upper(),
            base64.b64encode(bytes.fromhex(span["spanId"])).decode(),
            "0" * 16,
            {"a": 1},
        ],
        "parentSpanId": ["", None, 0, ["x"], "not hex", span["spanId"].upper(), "abc"],
        "name": [None, 5, ""],
        "kind": [None, True, 2.0, "SPAN_KIND_CLIENT", "3", 9, -1, [1]],
        "startTimeUnixNano": [123, 1.5e18, "1.5e18", "", "x", None, "-5", [1]],
        "endTimeUnixNano": [None, "12_3", " 42 ", True],
        "status": [None, {}, {"code": 2, "message": "boom"}, {"code": "STATUS_CODE_OK"}, [1]],
        "attributes": [
            None,
            {},
            [],
            [{"key": "i", "value": {"intValue": 5}}],
            [{"key": "i", "value": {"intValue": "5.0"}}],
            [{"key": "s", "value": {"stringValue": None}}],
            [{"key": "s", "value": {"string_value": "x"}}],
            [{"key": "d", "value": {"doubleValue": 1.5}}],
            [{"key": 3, "value": {"stringValue": "x"}}],
            [{"key": "s", "value": "x"}],
            [{"key": "s"}],
            ["x"],
            [{"key": "s", "value": {"stringValue": "x", "intValue": "1"}}],
        ],
        "events": [[{"name": "exception", "attributes": [], "timeUnixNano": "5"}], {}, [1]],
        "trace_id": [span["traceId"]],
        "parent_span_id": ["00000000000000ab"],
    }
    variants = [span]
    for key, values in changes.items():
        for value in values:
            changed = dict(span)
            if value is None:
                changed.pop(key, None)
                if key in ("traceId", "spanId"):
                    changed[key.replace("Id", "_id").replace("span_", "span_").lower()] = span[key]
            else:
                changed[key] = value
            variants.append(changed)
    return variants


MALFORMED = (TypeError, ValueError, AttributeError, KeyError, OverflowError)


def test_the_fast_otlp_path_reads_every_span_as_the_generic_reader_does(sdk_spans) -> None:
    """Exporter-shaped spans take a fast path; it must never build a different view."""
    from otel_loopguard.analyze import readers

    document = spans_to_otlp_json(sdk_spans)
    spans = [
        s for block in document["resourceSpans"] for sc in block["scopeSpans"] for s in sc["spans"]
    ]
    resource = {"service.name": "x"}
    fast_taken = 0
    for span in spans:
        for variant in _variants(span):
            generic_stats, stats = ReadStats(), ReadStats()
            try:
                expected = readers._otlp_span(variant, resource, "scope", generic_stats)
            except MALFORMED:
                expected, generic_stats.skipped_spans = None, 1
            got = readers.otlp_span(variant, resource, "scope", stats)
            assert got == expected, variant
            assert (stats.spans, stats.skipped_spans) == (
                generic_stats.spans,
                generic_stats.skipped_spans,
            )
            # a shape the fast path does not take raises or gives None: the generic reader read it
            with contextlib.suppress(*MALFORMED):
                fast_taken += readers._canonical_otlp_span(variant, resource, "scope") == got
    assert fast_taken >= len(spans)  # the exporter's own shape takes the fast path
