"""A real OpenTelemetry SDK pipeline with otel-loopguard and this instrumentation installed
(see otel_loopguard_testing), and LiteLLM talking to a scripted OpenAI-compatible API on
a loopback port (the one stand-in: no network here)."""

from __future__ import annotations

import os

# LiteLLM would fetch its model price list from the network at import
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from otel_loopguard_litellm import LiteLLMInstrumentor
from otel_loopguard_testing import Testbed, harness_fixtures
from otel_loopguard_testing.third_party import serve_fixture

TESTBED = Testbed()
#: the hand-written agent loops' own spans
TRACER = TESTBED.provider.get_tracer("tests")

# the instrumentor once per session; ``make_loopguard(mode=..., **settings)`` per test
instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(
    LiteLLMInstrumentor, TESTBED
)

serve = serve_fixture()
