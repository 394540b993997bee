"""A real OpenTelemetry SDK pipeline with otel-loopguard and this instrumentation installed
(see otel_loopguard_testing)."""

from __future__ import annotations

import os

# CrewAI's own telemetry and trace upload stay off in tests (no network here anyway)
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")


from otel_loopguard_crewai import CrewAIInstrumentor
from otel_loopguard_testing import Testbed, harness_fixtures

TESTBED = Testbed()
#: the hand-written agent loops' own spans
TRACER = TESTBED.provider.get_tracer("tests")

# the instrumentor once per session; ``make_loopguard(mode=..., **settings)`` per test
instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(
    CrewAIInstrumentor, TESTBED
)
