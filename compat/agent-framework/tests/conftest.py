"""Microsoft Agent Framework's own OpenTelemetry instrumentation (``agent-framework-core``,
``enable_instrumentation``) on a real SDK pipeline with otel-loopguard's core alone: a real
``Agent`` on the framework's OpenAI chat-completion client against the scripted
OpenAI-compatible API on a loopback port (``otel_loopguard_testing.scripted_openai``). The
framework's tracers are the global provider's, which becomes the testbed's; content is its
"sensitive data" (``enable_sensitive_data``, off by default)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from agent_framework.observability import enable_instrumentation
from opentelemetry import trace
from otel_loopguard_testing import Testbed, harness_fixtures
from otel_loopguard_testing.third_party import serve_fixture

TESTBED = Testbed()


class AgentFrameworkTelemetry:
    """The framework's instrumentation as the suite's "instrumentor": switched on with its
    content recorded; its tracers follow the global provider, the testbed's."""

    is_instrumented_by_opentelemetry = True

    def instrument(self, tracer_provider: Any = None, **_: Any) -> None:
        if tracer_provider is not None:
            trace.set_tracer_provider(tracer_provider)
        enable_instrumentation(enable_sensitive_data=True)

    def uninstrument(self) -> None:
        return None


instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(
    AgentFrameworkTelemetry, TESTBED
)


@pytest.fixture(params=[False, True], ids=["content", "content hidden"], name="hidden")
def hidden_fixture(request: Any) -> Iterator[bool]:
    """Their content recorded, then not (``enable_sensitive_data=False``, their default)."""
    enable_instrumentation(enable_sensitive_data=not request.param)
    try:
        yield bool(request.param)
    finally:
        enable_instrumentation(enable_sensitive_data=True)


serve = serve_fixture()
