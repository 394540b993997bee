"""The official ``opentelemetry-instrumentation-google-genai`` (from PyPI) on a real SDK
pipeline with otel-loopguard's core alone: the real ``google-genai`` client against a scripted
Gemini API on a loopback port (``gemini_api.py``), its automatic function calling running the
application's Python tools (their ``execute_tool`` spans, one ``generate_content`` span per
call of the client). Content: ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` and
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY`` (``hidden``: ``NO_CONTENT``,
instrumented again with it)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

os.environ.setdefault("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"

import pytest
from opentelemetry.instrumentation.google_genai import GoogleGenAiSdkInstrumentor
from otel_loopguard_testing import Testbed, harness_fixtures

TESTBED = Testbed()
instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(
    GoogleGenAiSdkInstrumentor, TESTBED
)


@pytest.fixture(params=[False, True], ids=["content", "content hidden"], name="hidden")
def hidden_fixture(request: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[bool]:
    """Their content recorded, then not (instrumented again with ``NO_CONTENT``)."""
    if not request.param:
        yield False
        return
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "NO_CONTENT")
    TESTBED.instrumentor.uninstrument()
    TESTBED.instrument(GoogleGenAiSdkInstrumentor())
    try:
        yield True
    finally:
        monkeypatch.undo()
        TESTBED.instrumentor.uninstrument()
        TESTBED.instrument(GoogleGenAiSdkInstrumentor())
