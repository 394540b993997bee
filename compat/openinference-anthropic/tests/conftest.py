"""OpenInference's Anthropic instrumentation (openinference-instrumentation-anthropic, from
PyPI) on a real SDK pipeline with otel-loopguard's core: theirs is the suite's instrumentor
(our core alone beside it, and beside the SDK's own ``chat`` span); ``beside_ours`` adds our
anthropic package after theirs (our wrapper outside theirs), ``ours_inside`` before theirs
(their ``messages.create`` span around our call: a request our pre-flight refuses ends it
with our interrupt as its exception).

The agent is our anthropic suite's hand-written tool-use loop (``agent_run`` and the
``tool_span`` gate of our core) on the real SDK over a scripted HTTP transport (imported from
``instrumentation/anthropic/tests``, not copied).
"""

from __future__ import annotations

import sys
from pathlib import Path

from openinference.instrumentation.anthropic import AnthropicInstrumentor as OpenInference
from opentelemetry import trace
from otel_loopguard_anthropic import AnthropicInstrumentor
from otel_loopguard_testing import Testbed
from otel_loopguard_testing.third_party import (
    hidden_fixture,
    openinference_fixtures,
    ours_first_fixture,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "instrumentation/anthropic/tests"))

TESTBED = Testbed()
# the SDK makes its own spans with the global provider: the same one, so the guard sees them
trace.set_tracer_provider(TESTBED.provider)

FIXTURES = openinference_fixtures(OpenInference, AnthropicInstrumentor, TESTBED)
instrumented, make_loopguard, loopguard, observe_loopguard, beside_ours, content_hidden = FIXTURES
ours_inside = ours_first_fixture(TESTBED, OpenInference, AnthropicInstrumentor)
hidden = hidden_fixture()
