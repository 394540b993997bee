"""OpenLLMetry's OpenAI Agents instrumentation (``opentelemetry-instrumentation-openai-agents``)
on a real SDK pipeline with our core; ``with_our_package`` adds our OpenAI Agents package.

Theirs is a trace processor of the Agents SDK's own tracing (``sdk_suite``: that tracing
stays on, with theirs as its only processor).
"""

from __future__ import annotations

from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from sdk_suite import suite_fixtures

# theirs once per session; a fresh guard per test
FIXTURES = suite_fixtures(OpenAIAgentsInstrumentor)
instrumented, make_loopguard, loopguard, observe_loopguard, with_our_package = FIXTURES
