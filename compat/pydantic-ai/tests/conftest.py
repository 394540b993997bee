"""pydantic-ai's own instrumentation (``InstrumentationSettings`` on each agent) on a real
SDK pipeline with our core; ``with_our_package`` adds our pydantic-ai package.

The agents and their ``FunctionModel`` scripts are our pydantic-ai suite's
(``instrumentation/pydantic_ai/tests/scripted_agents.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path

PYDANTIC_AI_TESTS = (
    Path(__file__).resolve().parents[3] / "instrumentation" / "pydantic_ai" / "tests"
)
sys.path.insert(0, str(PYDANTIC_AI_TESTS))

from otel_loopguard_testing import harness_fixtures  # noqa: E402
from otel_loopguard_testing.harness import instrumentor_fixture  # noqa: E402


class TheirsPerAgent:
    """pydantic-ai's instrumentation is switched on per agent (``agent.instrument = ...``):
    nothing to install for the session. Stands where an instrumentor is expected."""

    is_instrumented_by_opentelemetry = True

    def instrument(self, **kwargs: object) -> None:
        self.is_instrumented_by_opentelemetry = True

    def uninstrument(self, **kwargs: object) -> None:
        self.is_instrumented_by_opentelemetry = False


def _our_package():
    from otel_loopguard_pydantic_ai import PydanticAIInstrumentor

    return PydanticAIInstrumentor()


instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(TheirsPerAgent)
with_our_package = instrumentor_fixture("with_our_package", _our_package)
