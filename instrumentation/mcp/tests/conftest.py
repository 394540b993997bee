"""A real OpenTelemetry SDK pipeline with otel-loopguard and this instrumentation installed."""

from __future__ import annotations

import sys
from pathlib import Path

# shared real-OpenTelemetry helpers of the instrumentation suites
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "_testing"))

from loopguard_testing import harness_fixtures
from otel_loopguard_mcp import MCPInstrumentor

# the instrumentor once per session; a fresh guard per test (see ../../_testing/README.md)
instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(MCPInstrumentor)
