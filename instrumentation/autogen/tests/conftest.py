"""A real OpenTelemetry SDK pipeline with otel-loopguard and this instrumentation installed
(see otel_loopguard_testing)."""

from __future__ import annotations

import os

# autogen-core's runtime makes spans of its own on the global provider: not under test here
os.environ.setdefault("AUTOGEN_DISABLE_RUNTIME_TRACING", "true")

from otel_loopguard_autogen import AutoGenInstrumentor
from otel_loopguard_testing import harness_fixtures

# the instrumentor once per session; a fresh guard per test
instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(AutoGenInstrumentor)
