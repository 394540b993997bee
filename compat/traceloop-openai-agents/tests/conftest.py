"""OpenLLMetry's OpenAI Agents instrumentation (``opentelemetry-instrumentation-openai-agents``)
on a real SDK pipeline with our core; ``with_our_package`` adds our OpenAI Agents package.

Theirs is a trace processor of the Agents SDK's own tracing: that tracing stays on here,
with theirs as its only processor (the SDK's default one would upload traces to OpenAI).
"""

from __future__ import annotations

from agents import set_trace_processors
from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from otel_loopguard_testing import harness_fixtures
from otel_loopguard_testing.harness import instrumentor_fixture

set_trace_processors([])  # theirs adds itself when it instruments


def _our_package():
    from otel_loopguard_openai_agents import OpenAIAgentsInstrumentor as Ours

    return Ours()


# theirs once per session; a fresh guard per test
instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(
    OpenAIAgentsInstrumentor
)
with_our_package = instrumentor_fixture("with_our_package", _our_package)
