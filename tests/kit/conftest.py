"""A real SDK tracer provider with the span processor and an in-memory exporter, and a real
guard installed as the process-wide one, for the kit's tests."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otel.helpers import make_stack

from otel_loopguard import LoopGuard, set_guard


@dataclass
class Kit:
    guard: LoopGuard
    exporter: InMemorySpanExporter
    tracer: Any

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        return [
            span for span in self.exporter.get_finished_spans() if name is None or span.name == name
        ]

    def internal_errors(self, monkeypatch: pytest.MonkeyPatch) -> list[str]:
        """Where our internal errors are counted from now on (``<package>.<place>``)."""
        counted: list[str] = []
        monkeypatch.setattr(
            self.guard.telemetry, "internal_error", lambda where, exc: counted.append(where)
        )
        return counted

    def steps(self, run_id: str) -> int:
        summary = self.guard.monitor.run_snapshot(run_id)
        return summary.counters.steps if summary is not None else 0


def build(**config: Any) -> Kit:
    stack = make_stack(**config)
    return Kit(stack.guard, stack.exporter, stack.provider.get_tracer("tests.kit"))


@pytest.fixture
def make_kit() -> Iterator[Any]:
    """``make_kit(**config)``: a fresh stack, its guard the process-wide one for the test."""
    previous: list[Any] = []

    def make(**config: Any) -> Kit:
        kit = build(**config)
        previous.append(set_guard(kit.guard))
        return kit

    yield make
    if previous:
        set_guard(previous[0])


@pytest.fixture
def stack(make_kit: Any) -> Kit:
    """A stack in the default (observe) mode, its guard the process-wide one."""
    return make_kit()
