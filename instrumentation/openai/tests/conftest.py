"""A real OpenTelemetry SDK pipeline with otel-loopguard and this instrumentation installed
(see otel_loopguard_testing)."""

from __future__ import annotations

from otel_loopguard_openai import OpenAIInstrumentor
from otel_loopguard_testing import Testbed, harness_fixtures

TESTBED = Testbed()
#: the hand-written agent loops' own spans
TRACER = TESTBED.provider.get_tracer("tests")

# the instrumentor once per session; ``make_loopguard(mode=..., **settings)`` per test
instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(
    OpenAIInstrumentor, TESTBED
)
