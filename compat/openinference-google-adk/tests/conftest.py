"""OpenInference's Google ADK instrumentation (openinference-instrumentation-google-adk, from
PyPI) on a real SDK pipeline with otel-loopguard's core: installed once per session as the
suite's instrumentor (``make_loopguard`` / ``observe_loopguard``: our core alone beside it);
``beside_ours`` adds our google_adk package on the same provider for one test (instrumented
after theirs, as ``opentelemetry-instrument`` may do: our ``Runner.run_async`` wrapper outside
their proxy); ``ours_inside`` instruments theirs again after ours (their proxy outside ours).

The agents are ADK's real ``LlmAgent`` loops driven by our google_adk suite's scripted
``BaseLlm`` (imported from ``instrumentation/google_adk/tests`` rather than copied).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openinference.instrumentation.google_adk import GoogleADKInstrumentor as OpenInference
from otel_loopguard_google_adk import GoogleADKInstrumentor
from otel_loopguard_testing import Testbed
from otel_loopguard_testing.third_party import openinference_fixtures

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "instrumentation/google_adk/tests"))

TESTBED = Testbed()

FIXTURES = openinference_fixtures(OpenInference, GoogleADKInstrumentor, TESTBED)
instrumented, make_loopguard, loopguard, observe_loopguard, beside_ours, content_hidden = FIXTURES


@pytest.fixture
def ours_inside(make_loopguard) -> Iterator[Any]:
    """Our package instrumented first, theirs after it: their proxy outside our wrapper."""
    TESTBED.instrumentor.uninstrument()
    ours: Any = GoogleADKInstrumentor()
    ours.instrument(tracer_provider=TESTBED.provider)
    theirs: Any = OpenInference()
    theirs.instrument(tracer_provider=TESTBED.provider)
    try:
        yield make_loopguard
    finally:
        theirs.uninstrument()
        ours.uninstrument()
        TESTBED.instrument(TESTBED.instrumentor)
