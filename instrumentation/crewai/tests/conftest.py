"""Real OpenTelemetry SDK (in-memory exporter + the loopguard span processor) and a guard
configured per test."""

from __future__ import annotations

import os

# CrewAI's own telemetry and trace upload stay off in tests (no network here anyway)
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otel_loopguard_crewai import CrewAIInstrumentor

from otel_loopguard.config import LoopGuardConfig
from otel_loopguard.decisions import Decision
from otel_loopguard.enforcement import LoopGuard, set_guard
from otel_loopguard.events import Event
from otel_loopguard.processor import LoopGuardSpanProcessor


class OpenSpans(SpanProcessor):
    """Spans started and not ended: every test's spans must all end."""

    def __init__(self) -> None:
        self.open: dict[int, str] = {}

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        self.open[span.context.span_id] = span.name

    def on_end(self, span: ReadableSpan) -> None:
        self.open.pop(span.context.span_id, None)


EXPORTER = InMemorySpanExporter()
OPEN_SPANS = OpenSpans()
PROVIDER = TracerProvider()
PROVIDER.add_span_processor(OPEN_SPANS)
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))
_PROCESSOR = LoopGuardSpanProcessor(tracer_provider=PROVIDER)
PROVIDER.add_span_processor(_PROCESSOR)
TRACER = PROVIDER.get_tracer("tests")


class Harness:
    def __init__(self, guard: LoopGuard) -> None:
        self.guard = guard
        self.decisions: list[tuple[Decision, Event]] = []
        guard.on_decision(lambda decision, event: self.decisions.append((decision, event)))

    def spans(self, prefix: str = "") -> list[ReadableSpan]:
        return [span for span in EXPORTER.get_finished_spans() if span.name.startswith(prefix)]

    def open_spans(self) -> list[str]:
        return sorted(OPEN_SPANS.open.values())

    def decision_events(self, span: ReadableSpan) -> list[dict[str, Any]]:
        return [dict(e.attributes or {}) for e in span.events if e.name == "loopguard.decision"]


@pytest.fixture(scope="session", autouse=True)
def _instrumented() -> Iterator[None]:
    instrumentor = CrewAIInstrumentor()
    instrumentor.instrument(tracer_provider=PROVIDER)
    yield
    instrumentor.uninstrument()


@pytest.fixture
def loopguard() -> Iterator[Callable[..., Harness]]:
    """``loopguard(mode="enforce", token_budget=...)``: a fresh process-wide guard, shared
    by the wrappers and the span processor, for this test."""

    def make(**settings: Any) -> Harness:
        guard = LoopGuard(LoopGuardConfig(**settings), tracer_provider=PROVIDER)
        _PROCESSOR.guard = guard
        set_guard(guard)
        EXPORTER.clear()
        OPEN_SPANS.open.clear()
        return Harness(guard)

    yield make
    set_guard(None)
    EXPORTER.clear()
