"""OpenLLMetry's CrewAI instrumentation (``opentelemetry-instrumentation-crewai``, from
PyPI) on a real SDK pipeline with our core, installed once per session as the suite's
instrumentor; ``with_their_openai`` adds OpenLLMetry's OpenAI instrumentation, and
``with_our_package`` our CrewAI package, on the same provider for one test.

With CrewAI 1.x's native providers (``LLM(model="gpt-…")`` calls the OpenAI SDK itself,
not LiteLLM) their CrewAI instrumentation makes a crew, task and agent span and no model or
tool span. The crews are our crewai suite's (``instrumentation/crewai/tests``), their model
CrewAI's own OpenAI provider against the scripted OpenAI API on a loopback HTTP server (the
one stand-in: the network is out of reach).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# CrewAI's own telemetry and trace upload stay off in tests (no network here anyway)
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "instrumentation/crewai/tests"))

from opentelemetry.instrumentation.crewai import CrewAIInstrumentor
from opentelemetry.instrumentation.openai import OpenAIInstrumentor
from otel_loopguard_crewai import CrewAIInstrumentor as OurInstrumentor
from otel_loopguard_testing import Testbed, harness_fixtures
from otel_loopguard_testing.harness import instrumentor_fixture

TESTBED = Testbed()
instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(
    CrewAIInstrumentor, TESTBED
)
with_their_openai = instrumentor_fixture("with_their_openai", OpenAIInstrumentor)
with_our_package = instrumentor_fixture("with_our_package", OurInstrumentor)


@pytest.fixture(params=["theirs-first", "ours-first"])
def either_order(request, make_loopguard) -> Iterator:
    """``either_order(mode=..., **settings)``: a guard, with OpenLLMetry's CrewAI and OpenAI
    instrumentations and our CrewAI package all applied, theirs before ours (as the session
    has them) or ours before theirs; put back as the session had them after the test."""
    applied: list = []

    def install(**settings):
        harness = make_loopguard(**settings)
        theirs_crewai = TESTBED.instrumentor
        order = [OurInstrumentor(), OpenAIInstrumentor()]
        if request.param == "ours-first":
            theirs_crewai.uninstrument()
            order.append(theirs_crewai)
        for instrumentor in order:
            instrumentor.instrument(tracer_provider=TESTBED.provider)
            applied.append(instrumentor)
        return harness

    yield install
    # wrapt wrappers come off outermost first (an unwrap removes whatever is outermost)
    for instrumentor in reversed(applied):
        instrumentor.uninstrument()
    if not TESTBED.instrumentor.is_instrumented_by_opentelemetry:
        TESTBED.instrument(TESTBED.instrumentor)
