"""OpenInference's smolagents instrumentation (openinference-instrumentation-smolagents, from
PyPI) on a real SDK pipeline with otel-loopguard's core: installed once per session as the
suite's instrumentor (``make_loopguard`` / ``observe_loopguard``: our core alone beside it);
``beside_ours`` adds our smolagents package on the same provider for one test (instrumented
after theirs: our ``run`` wrapper outside theirs); ``ours_inside`` instruments theirs again
after ours (their wrapper outside ours).

The agents are smolagents' real loops driven by our smolagents suite's scripted models
(imported from ``instrumentation/smolagents/tests`` rather than copied).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openinference.instrumentation.smolagents import SmolagentsInstrumentor as OpenInference
from otel_loopguard_smolagents import SmolagentsInstrumentor
from otel_loopguard_testing import Testbed
from otel_loopguard_testing.third_party import hidden_fixture, openinference_fixtures

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "instrumentation/smolagents/tests"))

TESTBED = Testbed()

FIXTURES = openinference_fixtures(OpenInference, SmolagentsInstrumentor, TESTBED)
instrumented, make_loopguard, loopguard, observe_loopguard, beside_ours, content_hidden = FIXTURES
hidden = hidden_fixture()


@pytest.fixture
def ours_inside(make_loopguard) -> Iterator[Any]:
    """Our package instrumented first, theirs after it: their ``run`` wrapper outside ours."""
    TESTBED.instrumentor.uninstrument()
    ours: Any = SmolagentsInstrumentor()
    ours.instrument(tracer_provider=TESTBED.provider)
    theirs: Any = OpenInference()
    theirs.instrument(tracer_provider=TESTBED.provider)
    try:
        yield make_loopguard
    finally:
        theirs.uninstrument()
        ours.uninstrument()
        TESTBED.instrument(TESTBED.instrumentor)
