"""A real OpenTelemetry SDK pipeline with otel-loopguard and this instrumentation installed
(see otel_loopguard_testing)."""

from __future__ import annotations

from opentelemetry import trace
from otel_loopguard_anthropic import AnthropicInstrumentor
from otel_loopguard_testing import Testbed, harness_fixtures

TESTBED = Testbed()
# the SDK makes its own spans with the global provider: the same one, so we see them
trace.set_tracer_provider(TESTBED.provider)

# the instrumentor once per session; ``make_loopguard(mode=..., **settings)`` per test
instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(
    AnthropicInstrumentor, TESTBED
)
