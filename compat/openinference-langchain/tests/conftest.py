"""OpenInference's LangChain instrumentation (openinference-instrumentation-langchain, from
PyPI) on a real SDK pipeline with otel-loopguard's core: installed once per session as the
suite's instrumentor (``make_loopguard`` / ``observe_loopguard``: our core alone beside it);
``beside_ours`` adds our LangChain package on the same provider for one test.

The agents are our LangChain suite's offline LangGraph agents (langchain-core's own fake chat
model, real ``@tool`` functions that count their executions): imported from
``instrumentation/langchain/tests`` rather than copied.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openinference.instrumentation import TraceConfig
from openinference.instrumentation.langchain import LangChainInstrumentor as OpenInference
from otel_loopguard_langchain import LangChainInstrumentor
from otel_loopguard_testing import Testbed, harness_fixtures, instrumentor_fixture

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "instrumentation/langchain/tests"))

TESTBED = Testbed()

instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(
    OpenInference, TESTBED
)
beside_ours = instrumentor_fixture("beside_ours", LangChainInstrumentor)


@pytest.fixture
def content_hidden() -> Iterator[None]:
    """OpenInference with inputs and outputs hidden (``OPENINFERENCE_HIDE_INPUTS`` /
    ``_OUTPUTS``): it writes ``__REDACTED__`` in their place."""
    TESTBED.instrumentor.uninstrument()
    hidden: Any = OpenInference()
    hidden.instrument(
        tracer_provider=TESTBED.provider,
        config=TraceConfig(hide_inputs=True, hide_outputs=True),
    )
    try:
        yield
    finally:
        hidden.uninstrument()
        TESTBED.instrument(TESTBED.instrumentor)
