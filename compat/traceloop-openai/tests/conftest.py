"""OpenLLMetry's OpenAI instrumentation (``opentelemetry-instrumentation-openai``) on a real SDK
pipeline with our core; ``with_openai_package`` adds our OpenAI package. The hand-written
loop and its scripted API are compat/openai-v2's (the OpenAI SDK's real client over an
httpx mock transport: the one stand-in, the network being out of reach)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "openai-v2" / "tests"))

from opentelemetry.instrumentation.openai import OpenAIInstrumentor
from otel_loopguard_testing import harness_fixtures, openai_package_fixture

# theirs once per session; a fresh guard per test
instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(OpenAIInstrumentor)
with_openai_package = openai_package_fixture()
