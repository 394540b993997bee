"""A real OpenTelemetry SDK pipeline with otel-loopguard and this instrumentation installed
(see otel_loopguard_testing)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from otel_loopguard_strands import StrandsInstrumentor
from otel_loopguard_testing import harness_fixtures

# the instrumentor once per session; a fresh guard per test
instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(StrandsInstrumentor)


@pytest.fixture
def trace_strands() -> Iterator[Callable[[Any], Any]]:
    """``trace_strands(harness)``: Strands' own tracing on the test's provider, as
    ``StrandsTelemetry`` or ``opentelemetry-instrument`` would set it up on the global one,
    so its ``invoke_agent``, ``execute_event_loop_cycle``, ``chat`` and ``execute_tool`` spans
    reach the span processor. (Strands' tracer takes the global provider once, when first
    made, and a process sets the global provider only once: the test points that tracer at
    its own.) Returns the harness."""
    from strands.telemetry.tracer import get_tracer

    strands_tracer = get_tracer()
    saved = strands_tracer.tracer_provider, strands_tracer.tracer

    def trace(harness: Any) -> Any:
        strands_tracer.tracer_provider = harness.provider
        strands_tracer.tracer = harness.provider.get_tracer("strands.telemetry.tracer")
        return harness

    try:
        yield trace
    finally:
        strands_tracer.tracer_provider, strands_tracer.tracer = saved


@pytest.fixture
def strands_tracing(loopguard: Any, trace_strands: Callable[[Any], Any]) -> Any:
    """The enforce-mode harness, with Strands' own tracing on (see ``trace_strands``)."""
    return trace_strands(loopguard)
