"""A real OpenTelemetry SDK pipeline with otel-loopguard and this instrumentation installed
(see otel_loopguard_testing)."""

from __future__ import annotations

from otel_loopguard_agno import AgnoInstrumentor
from otel_loopguard_testing import harness_fixtures

# the instrumentor once per session; a fresh guard per test
instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(AgnoInstrumentor)
