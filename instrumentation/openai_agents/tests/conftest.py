"""A real OpenTelemetry SDK pipeline with otel-loopguard and this instrumentation installed."""

from __future__ import annotations

import os

# the SDK's own tracing would try to upload traces to OpenAI
os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"

from otel_loopguard_openai_agents import OpenAIAgentsInstrumentor
from otel_loopguard_testing import harness_fixtures

# the instrumentor once per session; a fresh guard per test (see otel_loopguard_testing)
instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(
    OpenAIAgentsInstrumentor
)
