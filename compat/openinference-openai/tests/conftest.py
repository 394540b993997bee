"""OpenInference's OpenAI instrumentation (openinference-instrumentation-openai, from PyPI) on
a real SDK pipeline with otel-loopguard's core: installed once per session as the suite's
instrumentor (our core alone beside it); ``beside_ours`` adds our OpenAI SDK package on the
same provider for one test.

The application is a hand-written agent loop over the real OpenAI client on the scripted
API's mock transport, its tools plain code (no tool span): the one of the openai-v2 suite
(imported from ``compat/openai-v2/tests``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from openinference.instrumentation.openai import OpenAIInstrumentor as OpenInference
from otel_loopguard_openai import OpenAIInstrumentor
from otel_loopguard_testing.third_party import hidden_fixture, openinference_fixtures

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "openai-v2/tests"))

FIXTURES = openinference_fixtures(OpenInference, OpenAIInstrumentor)
instrumented, make_loopguard, loopguard, observe_loopguard, beside_ours, content_hidden = FIXTURES
hidden = hidden_fixture()
