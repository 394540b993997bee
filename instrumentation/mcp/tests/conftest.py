"""A real OpenTelemetry SDK pipeline with otel-loopguard and this instrumentation installed."""

from __future__ import annotations

from otel_loopguard_mcp import MCPInstrumentor
from otel_loopguard_testing import harness_fixtures

# the instrumentor once per session; a fresh guard per test (see otel_loopguard_testing)
instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(MCPInstrumentor)
