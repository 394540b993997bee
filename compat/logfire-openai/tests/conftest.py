"""Logfire's OpenAI instrumentation (``logfire.instrument_openai``, from PyPI) on a real SDK
pipeline with otel-loopguard's core, Logfire configured to send to no backend
(``send_to_logfire=False``, no console, no metrics) and given the testbed's span processors
(Logfire makes spans with a tracer provider of its own). Theirs is the suite's instrumentor
(our core alone beside it); ``beside_ours`` adds our openai package after theirs,
``ours_inside`` before theirs.

The application is the shared hand-written chat loop (``run_chat_tool_loop``: our core's
``agent_run`` and ``tool_call`` gate) over the real OpenAI client on the scripted API's
mock transport.
"""

from __future__ import annotations

from typing import Any

import logfire
from otel_loopguard_openai import OpenAIInstrumentor
from otel_loopguard_testing import Testbed, harness_fixtures, instrumentor_fixture
from otel_loopguard_testing.third_party import ours_first_fixture

TESTBED = Testbed()
LOGFIRE = logfire.configure(
    local=True,
    send_to_logfire=False,
    console=False,
    metrics=False,
    additional_span_processors=list(TESTBED.span_processors),
)


class LogfireOpenAI:
    """``logfire.instrument_openai()`` as an instrumentor: it instruments the OpenAI client
    classes until the context manager it returns (entered here) is left."""

    is_instrumented_by_opentelemetry = False

    def __init__(self) -> None:
        self._instrumented: Any = None

    def instrument(self, **_: Any) -> None:
        self._instrumented = LOGFIRE.instrument_openai()
        self._instrumented.__enter__()
        self.is_instrumented_by_opentelemetry = True

    def uninstrument(self) -> None:
        if self._instrumented is not None:
            self._instrumented.__exit__(None, None, None)
            self._instrumented = None
        self.is_instrumented_by_opentelemetry = False


instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(
    LogfireOpenAI, TESTBED
)
beside_ours = instrumentor_fixture("beside_ours", OpenAIInstrumentor)
ours_inside = ours_first_fixture(TESTBED, LogfireOpenAI, OpenAIInstrumentor)
