"""The official OpenAI Agents instrumentation (``opentelemetry-instrumentation-openai-agents-v2``)
on a real SDK pipeline with our core; ``with_our_package`` adds our OpenAI Agents package.
The scripted agents, fixtures and shared checks are compat/traceloop-openai-agents' (the
Agents SDK's own OpenAI models on the OpenAI SDK's real client over an httpx mock
transport; ``sdk_suite``).

Theirs is a trace processor of the Agents SDK's own tracing: that tracing stays on, with
theirs as its only processor (the SDK's default one would upload traces to OpenAI).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "traceloop-openai-agents" / "tests"))

from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from sdk_suite import suite_fixtures

FIXTURES = suite_fixtures(OpenAIAgentsInstrumentor)
instrumented, make_loopguard, loopguard, observe_loopguard, with_our_package = FIXTURES
