"""The pipeline a model-call benchmark measures under: a real SDK ``TracerProvider`` whose
spans go to an exporter that drops them (export cost is not ours to measure), an
observe-mode ``LoopGuard`` with its span processor on that provider, installed as the
process's guard (the one the instrumentations find). Shared by the per-call benchmarks of
the model SDK packages, so they measure under the same setup."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.guard import LoopGuard, set_guard
from otel_loopguard.processor import LoopGuardSpanProcessor


class _Discard(SpanExporter):
    def export(self, spans: Any) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def observe_mode_pipeline() -> tuple[TracerProvider, LoopGuard]:
    """The provider and the process-wide guard (observe mode) on it."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_Discard()))
    guard = LoopGuard(LoopGuardConfig(mode="observe"), tracer_provider=provider)
    provider.add_span_processor(LoopGuardSpanProcessor(guard, tracer_provider=provider))
    set_guard(guard)
    return provider, guard
