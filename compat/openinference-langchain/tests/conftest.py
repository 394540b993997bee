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
from pathlib import Path

from openinference.instrumentation.langchain import LangChainInstrumentor as OpenInference
from otel_loopguard_langchain import LangChainInstrumentor
from otel_loopguard_testing.third_party import hidden_fixture, openinference_fixtures

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "instrumentation/langchain/tests"))

FIXTURES = openinference_fixtures(OpenInference, LangChainInstrumentor)
instrumented, make_loopguard, loopguard, observe_loopguard, beside_ours, content_hidden = FIXTURES
hidden = hidden_fixture()
