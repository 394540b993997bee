"""OpenLLMetry's LlamaIndex instrumentation (``opentelemetry-instrumentation-llamaindex``,
from PyPI) on a real SDK pipeline with otel-loopguard's core, installed once per session as
the suite's instrumentor; ``with_our_package`` adds our LlamaIndex package on the same
provider for one test.

Theirs is a span handler of LlamaIndex's instrumentation dispatcher: every dispatched method
is a ``task`` span (``<Class>.task``), the outermost a ``workflow`` span, each given its kind
only after it started. A tool's run is a ``FunctionTool.task`` span whose tool is named only
in its result. The agents are our llamaindex suite's ``FunctionAgent`` runs on
llama-index-core's own ``MockFunctionCallingLLM`` (``instrumentation/llamaindex/tests``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "instrumentation/llamaindex/tests"))

from opentelemetry.instrumentation.llamaindex import LlamaIndexInstrumentor
from otel_loopguard_llamaindex import LlamaIndexInstrumentor as OurInstrumentor
from otel_loopguard_testing import harness_fixtures
from otel_loopguard_testing.harness import instrumentor_fixture

instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(
    LlamaIndexInstrumentor
)
with_our_package = instrumentor_fixture("with_our_package", OurInstrumentor)


@pytest.fixture(params=["true", "false"], ids=["content-on", "content-off"])
def content(request, monkeypatch) -> bool:
    """Traceloop's content capture (``TRACELOOP_TRACE_CONTENT``, read per span)."""
    monkeypatch.setenv("TRACELOOP_TRACE_CONTENT", request.param)
    return request.param == "true"


@pytest.fixture(autouse=True)
def content_on_by_default(monkeypatch) -> None:
    monkeypatch.setenv("TRACELOOP_TRACE_CONTENT", "true")


def their_tool_spans(harness) -> list:
    """Their spans of a tool's run (``FunctionTool.task``), in start order."""
    spans = [s for s in harness.spans() if s.name == "FunctionTool.task"]
    return sorted(spans, key=lambda s: s.start_time)
