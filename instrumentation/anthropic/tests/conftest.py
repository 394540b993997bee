"""Real OpenTelemetry SDK + the real loop guard for every test (see ../../testing/)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from opentelemetry import trace
from otel_loopguard_anthropic import AnthropicInstrumentor

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "testing"))

from loopguard_harness import Testbed

TESTBED = Testbed()
# the SDK makes its own spans with the global provider: the same one, so we see them
trace.set_tracer_provider(TESTBED.provider)


@pytest.fixture(scope="session", autouse=True)
def instrumented():
    yield from TESTBED.instrumented(AnthropicInstrumentor())


@pytest.fixture
def loopguard(caplog):
    """``loopguard(mode="enforce", **settings)`` installs a fresh guard; returns its harness."""
    yield from TESTBED.guards(caplog)
