"""OpenInference's LiteLLM instrumentation (openinference-instrumentation-litellm, from PyPI)
on a real SDK pipeline with otel-loopguard's core: theirs is the suite's instrumentor (our
core alone beside it); ``beside_ours`` adds our litellm package after theirs (our wrapper
outside theirs), ``ours_inside`` before theirs (their span around our call: a request our
pre-flight refuses ends it with our interrupt as its exception).

The application is our litellm suite's hand-written loop over ``litellm.completion``
(``agent_run`` and the ``tool_call`` gate of our core), LiteLLM talking to a scripted
OpenAI-compatible API on a loopback port (imported from ``instrumentation/litellm/tests``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# LiteLLM would fetch its model price list from the network at import
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from openinference.instrumentation.litellm import LiteLLMInstrumentor as OpenInference
from otel_loopguard_litellm import LiteLLMInstrumentor
from otel_loopguard_testing import Testbed
from otel_loopguard_testing.third_party import (
    hidden_fixture,
    openinference_fixtures,
    ours_first_fixture,
    serve_fixture,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "instrumentation/litellm/tests"))

TESTBED = Testbed()
FIXTURES = openinference_fixtures(OpenInference, LiteLLMInstrumentor, TESTBED)
instrumented, make_loopguard, loopguard, observe_loopguard, beside_ours, content_hidden = FIXTURES
ours_inside = ours_first_fixture(TESTBED, OpenInference, LiteLLMInstrumentor)
hidden = hidden_fixture()

serve = serve_fixture()
