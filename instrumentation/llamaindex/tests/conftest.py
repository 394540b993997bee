"""A real OpenTelemetry SDK pipeline with otel-loopguard and this instrumentation installed
(see otel_loopguard_testing)."""

from __future__ import annotations

from otel_loopguard_llamaindex import LlamaIndexInstrumentor
from otel_loopguard_testing import Testbed, harness_fixtures

TESTBED = Testbed()

# the instrumentor once per session; ``make_loopguard(mode=..., **settings)`` per test
instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(
    LlamaIndexInstrumentor, TESTBED
)
