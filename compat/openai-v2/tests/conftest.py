"""The official ``opentelemetry-instrumentation-openai-v2`` on a real SDK pipeline with our
core; ``with_openai_package`` adds our OpenAI package. The OpenAI SDK's real client runs
over an httpx mock transport answering from a script (``otel_loopguard_testing.
scripted_openai``): the one stand-in, the network being out of reach."""

from __future__ import annotations

import os

# the GenAI semantic conventions' latest messages attributes (gen_ai.input.messages), and
# their content (read when the instrumentor instruments: hand_written.content_capture)
os.environ.setdefault("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"

from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
from otel_loopguard_testing import harness_fixtures, openai_package_fixture

# theirs once per session; a fresh guard per test
instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(OpenAIInstrumentor)
with_openai_package = openai_package_fixture()
