"""A real OpenTelemetry SDK pipeline with otel-loopguard and this instrumentation installed
(see ../../_testing/README.md)."""

from __future__ import annotations

import sys
from pathlib import Path

# the shared real-OpenTelemetry test support of the instrumentation suites
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "_testing"))

from loopguard_testing import Testbed, harness_fixtures
from opentelemetry import trace
from otel_loopguard_anthropic import AnthropicInstrumentor

TESTBED = Testbed()
# the SDK makes its own spans with the global provider: the same one, so we see them
trace.set_tracer_provider(TESTBED.provider)

# the instrumentor once per session; ``make_loopguard(mode=..., **settings)`` per test
instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(
    AnthropicInstrumentor, TESTBED
)
