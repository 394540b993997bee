"""OpenInference's LlamaIndex instrumentation (openinference-instrumentation-llama-index, from
PyPI) on a real SDK pipeline with otel-loopguard's core: installed once per session as the
suite's instrumentor (our core alone beside it); ``beside_ours`` adds our LlamaIndex package on
the same provider for one test.

Their spans get ``openinference.span.kind`` only when they end, and every method of a model
class is an ``LLM`` span (``achat`` around ``chat``, and the request's preparation). The agents
are our llamaindex suite's ``FunctionAgent`` runs on llama-index-core's own
``MockFunctionCallingLLM`` (imported from ``instrumentation/llamaindex/tests``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from openinference.instrumentation.llama_index import LlamaIndexInstrumentor as OpenInference
from otel_loopguard_llamaindex import LlamaIndexInstrumentor
from otel_loopguard_testing.third_party import hidden_fixture, openinference_fixtures

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "instrumentation/llamaindex/tests"))

FIXTURES = openinference_fixtures(OpenInference, LlamaIndexInstrumentor)
instrumented, make_loopguard, loopguard, observe_loopguard, beside_ours, content_hidden = FIXTURES
hidden = hidden_fixture()
