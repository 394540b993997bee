"""Google ADK's own OpenTelemetry spans (its built-in telemetry: no instrumentor to apply)
on a real SDK pipeline with otel-loopguard's core alone, in both of ADK's telemetry
schemas: ``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=2`` (the default: ``invoke_workflow`` around
``invoke_agent``, ``generate_content`` and ``execute_tool`` spans, content under
``gen_ai.*`` only with ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY``) and
``1`` (legacy: ``invocation`` around ``invoke_agent``, ``call_llm``, tool content under
``gcp.vertex.agent.*``, recorded unless ``ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=false``).
ADK reads both variables per run, so a test sets them with ``monkeypatch``.

ADK's tracers are the global provider's, so the testbed's provider is made the global one
(once per process). The agents are ADK's real ``LlmAgent`` loops on our google_adk suite's
scripted ``BaseLlm``; the looping agent of the OpenInference ADK suite is reused as it is.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from otel_loopguard_testing import Testbed, harness_fixtures

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "instrumentation/google_adk/tests"))
sys.path.insert(0, str(ROOT / "compat/openinference-google-adk/tests"))

TESTBED = Testbed()


class AdkOwnTelemetry:
    """ADK's telemetry as the suite's "instrumentor": always on, nothing to patch; its
    tracers follow the global provider, which becomes the testbed's."""

    is_instrumented_by_opentelemetry = True

    def instrument(self, tracer_provider: Any = None, **_: Any) -> None:
        if tracer_provider is not None:
            trace.set_tracer_provider(tracer_provider)

    def uninstrument(self) -> None:
        return None


instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(
    AdkOwnTelemetry, TESTBED
)

SCHEMAS = {"semconv (2)": "2", "legacy (1)": "1"}


@pytest.fixture(params=list(SCHEMAS), name="schema")
def schema_fixture(request: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each test once per ADK telemetry schema; content recorded (ADK's default in the
    legacy schema, asked for in the default one)."""
    monkeypatch.setenv("ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN", SCHEMAS[request.param])
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    monkeypatch.delenv("ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS", raising=False)
    yield SCHEMAS[request.param]


@pytest.fixture(params=[False, True], ids=["content", "content hidden"], name="hidden")
def hidden_fixture(request: Any, schema: str, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Content recorded, then not (ADK's default in schema 2; told so in schema 1)."""
    if request.param:
        monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
        monkeypatch.setenv("ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS", "false")
    return bool(request.param)
