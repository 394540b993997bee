"""OpenLLMetry's LangChain instrumentation (``opentelemetry-instrumentation-langchain``)
on a real SDK pipeline with our core; ``with_our_package`` adds our LangChain package.

The LangGraph agents and their scripted model are our LangChain suite's
(``instrumentation/langchain/tests/agents.py``: langchain-core's own fake chat model).
"""

from __future__ import annotations

import sys
from pathlib import Path

LANGCHAIN_TESTS = Path(__file__).resolve().parents[3] / "instrumentation" / "langchain" / "tests"
sys.path.insert(0, str(LANGCHAIN_TESTS))

from opentelemetry.instrumentation.langchain import LangchainInstrumentor  # noqa: E402
from otel_loopguard_testing import harness_fixtures  # noqa: E402
from otel_loopguard_testing.harness import instrumentor_fixture  # noqa: E402


def _our_package():
    from otel_loopguard_langchain import LangChainInstrumentor

    return LangChainInstrumentor()


# theirs once per session; a fresh guard per test
instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(LangchainInstrumentor)
with_our_package = instrumentor_fixture("with_our_package", _our_package)
