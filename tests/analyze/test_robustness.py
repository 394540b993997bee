"""Odd but parseable inputs never crash the reader or the replay: they are read, skipped, or
rejected with an InputError (exit 2), never an unexpected exception (a traceback)."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_loopguard.analyze.readers import read_spans
from otel_loopguard.analyze.replay import Replayer
from otel_loopguard.analyze.sources import InputError
from otel_loopguard.engine.config import LoopGuardConfig

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=12),
    st.sampled_from(["NaN", "Infinity", "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"]),
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
ANY_VALUE = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "stringValue": JSON,
            "intValue": JSON,
            "doubleValue": JSON,
            "boolValue": JSON,
            "arrayValue": JSON,
            "kvlistValue": JSON,
            "bytesValue": JSON,
        },
    ),
    JSON,
)
ATTRIBUTE_KEYS = st.sampled_from(
    [
        "gen_ai.operation.name",
        "gen_ai.tool.name",
        "gen_ai.agent.name",
        "gen_ai.conversation.id",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "gen_ai.usage.input_tokens",
        "gen_ai.response.finish_reasons",
        "openinference.span.kind",
        "error.type",
        "x",
    ]
)
OPERATIONS = st.sampled_from(["execute_tool", "invoke_agent", "chat", "invoke_workflow"])
ATTRIBUTES = st.lists(
    st.one_of(
        st.fixed_dictionaries({"key": ATTRIBUTE_KEYS, "value": ANY_VALUE}),
        st.fixed_dictionaries(
            {
                "key": st.just("gen_ai.operation.name"),
                "value": st.builds(lambda op: {"stringValue": op}, OPERATIONS),
            }
        ),
        JSON,
    ),
    max_size=6,
)
IDS = st.sampled_from(["0af7651916cd43dd8448eb211c80319c", "5b8efff798038103d269b633813fc60c"])
SPAN_IDS = st.sampled_from(["b7ad6b7169203331", "eee19b7ec3c1b174", "00f067aa0ba902b7", ""])
SPAN = st.one_of(
    st.fixed_dictionaries(
        {"traceId": IDS, "spanId": SPAN_IDS},
        optional={
            "parentSpanId": SPAN_IDS,
            "name": JSON,
            "kind": JSON,
            "startTimeUnixNano": JSON,
            "endTimeUnixNano": JSON,
            "attributes": ATTRIBUTES,
            "status": JSON,
            "events": st.lists(
                st.one_of(
                    st.fixed_dictionaries(
                        {}, optional={"name": JSON, "attributes": ATTRIBUTES, "timeUnixNano": JSON}
                    ),
                    JSON,
                ),
                max_size=2,
            ),
        },
    ),
    JSON,
)
OTLP = st.fixed_dictionaries(
    {
        "resourceSpans": st.lists(
            st.fixed_dictionaries(
                {
                    "scopeSpans": st.lists(
                        st.fixed_dictionaries(
                            {"spans": st.lists(SPAN, max_size=6)}, optional={"scope": JSON}
                        ),
                        max_size=2,
                    )
                },
                optional={"resource": JSON},
            ),
            max_size=2,
        )
    }
)
JAEGER_TAG = st.fixed_dictionaries(
    {
        "key": ATTRIBUTE_KEYS,
        "type": st.sampled_from(["string", "int64", "bool", "float64", "binary", "x"]),
        "value": JSON,
    }
)
JAEGER = st.fixed_dictionaries(
    {
        "data": st.lists(
            st.fixed_dictionaries(
                {
                    "spans": st.lists(
                        st.one_of(
                            st.fixed_dictionaries(
                                {"traceID": IDS, "spanID": SPAN_IDS},
                                optional={
                                    "operationName": JSON,
                                    "references": JSON,
                                    "startTime": JSON,
                                    "duration": JSON,
                                    "tags": st.lists(JAEGER_TAG, max_size=4),
                                    "logs": JSON,
                                    "processID": JSON,
                                },
                            ),
                            JSON,
                        ),
                        max_size=5,
                    )
                },
                optional={"processes": JSON, "traceID": JSON},
            ),
            max_size=2,
        )
    }
)


def _analyze(path: Path) -> None:
    replayer = Replayer(LoopGuardConfig(), lambda run: None)
    try:
        replayer.feed(read_spans([str(path)]))
        replayer.finish()
    except InputError:
        pass


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(document=st.one_of(OTLP, JAEGER), pretty=st.booleans())
def test_odd_documents_never_crash(tmp_path: Path, document, pretty: bool) -> None:
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(document, indent=2 if pretty else None))
    _analyze(path)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.binary(max_size=300))
def test_arbitrary_bytes_never_crash(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "bytes.bin"
    path.write_bytes(data)
    _analyze(path)


def _timed_documents(start: object, end: object) -> list[dict[str, object]]:
    """An OTLP and a Jaeger document whose one tool span has these times."""
    otlp_span = {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": "b7ad6b7169203331",
        "name": "execute_tool search",
        "kind": 1,
        "startTimeUnixNano": start,
        "endTimeUnixNano": end,
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": "search"}},
        ],
    }
    jaeger_span = {
        "traceID": "0af7651916cd43dd8448eb211c80319c",
        "spanID": "b7ad6b7169203331",
        "operationName": "execute_tool search",
        "startTime": float(str(end)) / 1000,  # Jaeger's µs: the larger time
        "duration": 5,
        "tags": [{"key": "gen_ai.tool.name", "type": "string", "value": "search"}],
    }
    return [
        {"resourceSpans": [{"scopeSpans": [{"spans": [otlp_span]}]}]},
        {"data": [{"traceID": jaeger_span["traceID"], "spans": [jaeger_span]}]},
    ]


def test_times_beyond_the_otlp_range_are_read_not_crashed_on(tmp_path: Path) -> None:
    """A time past OTLP's 64-bit range (1.8e305 µs or Infinity in a Jaeger file, a 400-digit
    number in an OTLP one) cannot become seconds as a float: it is clamped into the range,
    and the span is still replayed."""
    huge = "1" + "0" * 400
    for n, document in enumerate(
        [
            *_timed_documents("1" + "0" * 20, huge),
            *_timed_documents(str(-5), "1797693134862316" + "0" * 290),
        ]
    ):
        path = tmp_path / f"times-{n}.json"
        path.write_text(json.dumps(document))
        spans = list(read_spans([str(path)]))
        assert spans, document
        for span in spans:
            assert 0 <= span.start_time_unix_nano <= (1 << 64) - 1
            assert 0 <= span.end_time_unix_nano <= (1 << 64) - 1
        replayer = Replayer(LoopGuardConfig(), lambda run: None)
        replayer.feed(iter(spans))
        replayer.finish()
