"""A real OpenTelemetry SDK pipeline with otel-loopguard and this instrumentation installed
(see otel_loopguard_testing), and LiteLLM talking to a scripted OpenAI-compatible API on
a loopback port (the one stand-in: no network here)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

# LiteLLM would fetch its model price list from the network at import
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

INSTRUMENTATION = Path(__file__).resolve().parents[2]
# the OpenAI suite's scripted API (its JSON and server-sent-event shapes), served over HTTP;
# appended, so this folder's own modules come first
sys.path.append(str(INSTRUMENTATION / "openai" / "tests"))

import pytest  # noqa: E402
from otel_loopguard_litellm import LiteLLMInstrumentor  # noqa: E402
from otel_loopguard_testing import Testbed, harness_fixtures  # noqa: E402
from scripted_api import ScriptedAPI  # noqa: E402

TESTBED = Testbed()
#: the hand-written agent loops' own spans
TRACER = TESTBED.provider.get_tracer("tests")

# the instrumentor once per session; ``make_loopguard(mode=..., **settings)`` per test
instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(
    LiteLLMInstrumentor, TESTBED
)


@pytest.fixture
def serve():
    """``serve(turns)``: a :class:`ScriptedAPI` answering ``turns`` on a loopback port; its
    ``base`` attribute is the ``api_base`` to give LiteLLM."""
    stops = []

    def start(turns, **options):
        api = ScriptedAPI(turns, **options)
        api.base, stop = api.serve()
        stops.append(stop)
        return api

    yield start
    for stop in stops:
        stop()
