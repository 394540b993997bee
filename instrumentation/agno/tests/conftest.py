"""A real OpenTelemetry SDK pipeline with otel-loopguard and this instrumentation installed
(see ../../_testing/README.md)."""

from __future__ import annotations

import sys
from pathlib import Path

# the shared real-OpenTelemetry test support of the instrumentation suites
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "_testing"))

from loopguard_testing import harness_fixtures
from otel_loopguard_agno import AgnoInstrumentor

# the instrumentor once per session; a fresh guard per test
instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(AgnoInstrumentor)
