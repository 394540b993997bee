"""Langfuse's Python SDK (``langfuse``, from PyPI; OpenTelemetry based since 3.0) beside our
core, offline: no Langfuse server. ``Langfuse(tracer_provider=...)`` adds its span processor
to the suite's provider, its exporter is an in-memory one (``span_exporter=``), so its
spans reach our span processor as any user's do and nothing leaves the machine. Content off
is the SDK's ``LANGFUSE_OBSERVE_DECORATOR_IO_CAPTURE_ENABLED=false`` (read when a function
is decorated) or a ``mask`` that writes a placeholder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from langfuse import Langfuse
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otel_loopguard_testing import Testbed, harness_fixtures

sys.path.insert(0, str(Path(__file__).resolve().parent))

#: the client's settings: keys of no account, a host nothing listens on (never reached:
#: its exporter is in memory)
OFFLINE = {
    "public_key": "pk-lf-offline",
    "secret_key": "sk-lf-offline",
    "base_url": "http://127.0.0.1:9",
}


#: masking on (the ``masked`` fixture): the client's ``mask`` hides every input and output
MASKING = {"on": False}


def _mask(data, **_):
    """The suite's ``Langfuse(mask=...)``: the data as it is, or a placeholder in its place
    while ``masked`` is in force (what a user's masking of personal data writes)."""
    return "[REDACTED]" if MASKING["on"] else data


class LangfuseClient:
    """The Langfuse client as the suite's "instrumentor": made once on the testbed's provider
    (``instrument``), flushed and shut down at the end of the session (``uninstrument``)."""

    is_instrumented_by_opentelemetry = False

    def __init__(self) -> None:
        self.client: Langfuse | None = None
        self.exported = InMemorySpanExporter()

    def instrument(self, tracer_provider, **settings) -> None:
        if self.client is None:
            self.client = Langfuse(
                tracer_provider=tracer_provider,
                span_exporter=self.exported,
                mask=_mask,
                **OFFLINE,
            )
        self.is_instrumented_by_opentelemetry = True

    def uninstrument(self) -> None:
        if self.client is not None:
            self.client.shutdown()
        self.is_instrumented_by_opentelemetry = False


TESTBED = Testbed()
instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(
    LangfuseClient, TESTBED
)


@pytest.fixture(params=["content-on", "io-capture-off", "masked"])
def content(request, monkeypatch) -> str:
    """Content recorded, or not: the decorator's input/output capture off (read when a
    function is decorated: agents are built inside the test), or Langfuse's masking."""
    if request.param == "io-capture-off":
        monkeypatch.setenv("LANGFUSE_OBSERVE_DECORATOR_IO_CAPTURE_ENABLED", "false")
    if request.param == "masked":
        monkeypatch.setitem(MASKING, "on", True)
    return request.param
