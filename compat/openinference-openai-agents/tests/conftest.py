"""OpenInference's OpenAI Agents SDK instrumentation (openinference-instrumentation-openai-agents,
from PyPI) on a real SDK pipeline with otel-loopguard's core: installed once per session as the
suite's instrumentor (our core alone beside it); ``beside_ours`` adds our openai_agents package
on the same provider for one test.

Their instrumentation is a trace processor of the Agents SDK: the SDK's tracing stays on
(``exclusive_processor``, their default, replaces the SDK's uploading processor, so nothing
leaves the machine). The agents are our openai_agents suite's, driven by the SDK's own
``agents.testing.ScriptedModel`` (imported from ``instrumentation/openai_agents/tests``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor as OpenInference
from otel_loopguard_openai_agents import OpenAIAgentsInstrumentor
from otel_loopguard_testing.third_party import hidden_fixture, openinference_fixtures

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "instrumentation/openai_agents/tests"))

FIXTURES = openinference_fixtures(OpenInference, OpenAIAgentsInstrumentor)
instrumented, make_loopguard, loopguard, observe_loopguard, beside_ours, content_hidden = FIXTURES
hidden = hidden_fixture()
