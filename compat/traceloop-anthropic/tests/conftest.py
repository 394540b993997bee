"""OpenLLMetry's Anthropic instrumentation (opentelemetry-instrumentation-anthropic, from
PyPI) beside the Anthropic SDK's own ``chat`` span (the SDK 2.x traces every API call:
``anthropic.messages.create``, a CLIENT span), on a real SDK pipeline with otel-loopguard's
core: theirs is the suite's instrumentor (``make_loopguard``: our core alone beside both);
``beside_ours`` adds our anthropic package after theirs, ``ours_inside`` before theirs.

The two spans of one request are siblings with the same ``gen_ai.response.id`` (OpenLLMetry
does not make its span current): one answer, one step. The agent is our anthropic suite's
hand-written tool-use loop on the real SDK over a scripted HTTP transport (imported from
``instrumentation/anthropic/tests``, not copied).
"""

from __future__ import annotations

import sys
from pathlib import Path

from opentelemetry import trace
from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor as OpenLLMetry
from otel_loopguard_anthropic import AnthropicInstrumentor
from otel_loopguard_testing import Testbed, harness_fixtures, instrumentor_fixture
from otel_loopguard_testing.third_party import ours_first_fixture

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "instrumentation/anthropic/tests"))

TESTBED = Testbed()
# the SDK makes its own spans with the global provider: the same one, so the guard sees them
trace.set_tracer_provider(TESTBED.provider)

instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(OpenLLMetry, TESTBED)
beside_ours = instrumentor_fixture("beside_ours", AnthropicInstrumentor)
ours_inside = ours_first_fixture(TESTBED, OpenLLMetry, AnthropicInstrumentor)
