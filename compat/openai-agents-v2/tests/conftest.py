"""The official OpenAI Agents instrumentation (``opentelemetry-instrumentation-openai-agents-v2``)
on a real SDK pipeline with our core; ``with_our_package`` adds our OpenAI Agents package.
The scripted agents are compat/traceloop-openai-agents' (the Agents SDK's own OpenAI models
on the OpenAI SDK's real client over an httpx mock transport).

Theirs is a trace processor of the Agents SDK's own tracing: that tracing stays on, with
theirs as its only processor (the SDK's default one would upload traces to OpenAI).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "traceloop-openai-agents" / "tests"))

from agents import set_trace_processors
from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from otel_loopguard_testing import harness_fixtures
from otel_loopguard_testing.harness import instrumentor_fixture

set_trace_processors([])  # theirs adds itself when it instruments


def _our_package():
    from otel_loopguard_openai_agents import OpenAIAgentsInstrumentor as Ours

    return Ours()


instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(
    OpenAIAgentsInstrumentor
)
with_our_package = instrumentor_fixture("with_our_package", _our_package)
