"""The process's test pipeline (:class:`Testbed`), one test's view of it (:class:`Harness`),
and the fixtures a suite's conftest takes from :func:`harness_fixtures`."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from .lifecycle import SpanLifecycle


class _CurrentGuardProcessor(SpanProcessor):
    """Forwards to the current test's ``LoopGuardSpanProcessor``: a provider cannot drop a
    processor, and each test gets a fresh guard and processor on the session's provider."""

    def __init__(self) -> None:
        self.inner: SpanProcessor | None = None

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if self.inner is not None:
            self.inner.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        if self.inner is not None:
            self.inner.on_end(span)


class Harness:
    """One test's view of the pipeline: its guard (in the mode and with the settings it
    asked for), the spans exported since it was installed, the span lifecycle, and the
    decisions the guard took."""

    def __init__(self, testbed: Testbed, guard: Any, caplog: Any = None) -> None:
        self.testbed = testbed
        self.provider = testbed.provider
        self.exporter = testbed.exporter
        self.lifecycle = testbed.lifecycle
        self.guard = guard
        self.caplog = caplog
        #: ``(Decision, Event)`` pairs, in the order the guard took them
        self.decided: list[tuple[Any, Any]] = []
        guard.on_decision(lambda decision, event: self.decided.append((decision, event)))

    # -- the instrumentation ---------------------------------------------------------------

    def uninstrument(self) -> None:
        """Run the next part of a test without the instrumentation (a baseline)."""
        self.testbed.instrumentor.uninstrument()

    def reinstrument(self) -> None:
        self.testbed.instrumentor.instrument(tracer_provider=self.provider)

    def baseline(self, run: Callable[[], Any], *, spans: bool = False) -> Any:
        """``run()`` without the instrumentation, then instrumented again: what the
        application gets without the plugin. Unless ``spans``, none of the harness's
        spans may come of it."""
        self.uninstrument()
        try:
            result = run()
            if not spans:
                assert self.spans() == []  # uninstrumented: no span of ours
        finally:
            self.reinstrument()
        return result

    def app_tracer(self) -> Any:
        """A tracer for the application's own spans (a hand-written agent loop, say)."""
        return self.provider.get_tracer("application")

    # -- spans -----------------------------------------------------------------------------

    def spans(self, prefix: str = "") -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if s.name.startswith(prefix)]

    def named(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.spans() if span.name == name]

    def tool_spans(self, tool: str | None = None) -> list[ReadableSpan]:
        """``execute_tool`` spans (of ``tool``), by their GenAI attributes."""
        return [
            s
            for s in self.spans()
            if s.attributes.get("gen_ai.operation.name") == "execute_tool"
            and (tool is None or s.attributes.get("gen_ai.tool.name") == tool)
        ]

    def executed_tool_spans(self, tool: str) -> list[ReadableSpan]:
        """Tool spans of calls that ran (a pre-call veto ends its span without running)."""
        return [
            span
            for span in self.tool_spans(tool)
            if span.attributes.get("error.type") != "LoopGuardInterrupt"
        ]

    @staticmethod
    def vetoed_calls(tool_spans: list[ReadableSpan]) -> int:
        """Tool spans whose tool never ran: the pre-call veto or the call-time STOP."""
        return sum(1 for s in tool_spans if s.attributes.get("error.type") == "LoopGuardInterrupt")

    def agent_spans(self) -> list[ReadableSpan]:
        return [
            s for s in self.spans() if s.attributes.get("gen_ai.operation.name") == "invoke_agent"
        ]

    def run_state(self, agent: str) -> str:
        """``loopguard.run.state`` of the one ``invoke_agent {agent}`` span."""
        (span,) = self.named(f"invoke_agent {agent}")
        return span.attributes["loopguard.run.state"]

    def run_usage(self, agent: str) -> tuple[Any, Any]:
        """``(input, output)`` tokens on the one ``invoke_agent {agent}`` span (``None``
        where it has none)."""
        (span,) = self.named(f"invoke_agent {agent}")
        return (
            span.attributes.get("gen_ai.usage.input_tokens"),
            span.attributes.get("gen_ai.usage.output_tokens"),
        )

    # -- exported decisions ----------------------------------------------------------------

    @staticmethod
    def decisions_on(span: ReadableSpan, action: str | None = None) -> list[dict[str, Any]]:
        """Attributes of the ``loopguard.decision`` events on one span (of ``action``)."""
        return [
            dict(e.attributes or {})
            for e in span.events
            if e.name == "loopguard.decision"
            and (action is None or (e.attributes or {}).get("loopguard.action") == action)
        ]

    def decision_events(
        self, action: str | None = None
    ) -> list[tuple[ReadableSpan, dict[str, Any]]]:
        """Every exported ``loopguard.decision`` event (of ``action``), with its span."""
        return [
            (span, attributes)
            for span in self.spans()
            for attributes in self.decisions_on(span, action)
        ]

    # -- what was logged -------------------------------------------------------------------

    def logged(self) -> list[str]:
        """The messages logged (at WARNING and above) during the test."""
        return [r.getMessage() for r in self.caplog.records]

    # -- span lifecycle --------------------------------------------------------------------

    def open_spans(self) -> list[str]:
        return self.lifecycle.open_spans()

    def assert_every_span_ended_once(self) -> None:
        wrong = self.lifecycle.not_ended_exactly_once()
        assert not wrong, f"spans not ended exactly once: {wrong}"
        if self.caplog is not None:
            twice = [r for r in self.caplog.records if "ended span" in r.getMessage()]
            assert not twice, f"a span was ended twice: {twice[0].getMessage()}"


class Testbed:
    """The process's OpenTelemetry pipeline: a real SDK ``TracerProvider`` with the span
    lifecycle recorder, the otel-loopguard span processor of the current test and an
    in-memory exporter. Instrumentors patch classes once per process, so the instrumentor
    is installed once per session and each test gets a fresh guard (:meth:`install`)."""

    def __init__(self) -> None:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )

        self.provider = TracerProvider()
        self.exporter = InMemorySpanExporter()
        self.lifecycle = SpanLifecycle()
        self._guard_processor = _CurrentGuardProcessor()
        #: what the provider's spans go through, in order (an instrumentation with a tracer
        #: provider of its own, Logfire's, is given them too)
        self.span_processors: tuple[SpanProcessor, ...] = (
            self.lifecycle,
            self._guard_processor,
            SimpleSpanProcessor(self.exporter),
        )
        for processor in self.span_processors:
            self.provider.add_span_processor(processor)
        self.instrumentor: Any = None

    def instrument(self, instrumentor: Any) -> None:
        self.instrumentor = instrumentor
        instrumentor.instrument(tracer_provider=self.provider)

    def install(self, caplog: Any = None, *, mode: str = "enforce", **settings: Any) -> Harness:
        """A fresh process-wide guard (``LoopGuardConfig(mode=mode, **settings)``), shared by
        the instrumentor's wrappers and the span processor; clears the exported spans."""
        from otel_loopguard.engine.config import LoopGuardConfig
        from otel_loopguard.guard import LoopGuard, set_guard
        from otel_loopguard.processor import LoopGuardSpanProcessor

        guard = LoopGuard(LoopGuardConfig(mode=mode, **settings), tracer_provider=self.provider)
        set_guard(guard)
        self._guard_processor.inner = LoopGuardSpanProcessor(guard, tracer_provider=self.provider)
        self.exporter.clear()
        self.lifecycle.reset()
        return Harness(self, guard, caplog)

    def uninstall(self) -> None:
        from otel_loopguard.guard import set_guard

        self._guard_processor.inner = None
        set_guard(None)
        if self.instrumentor is not None and not self.instrumentor.is_instrumented_by_opentelemetry:
            self.instrument(self.instrumentor)  # a test ran a part uninstrumented


@contextlib.contextmanager
def wrappers_removed(owner: Any, *names: str) -> Iterator[None]:
    """The instrumentation without its wrappers of ``owner``'s (a class's or a module's)
    attributes ``names`` for the block: what a run saw before those wrappers existed (a
    baseline part of a test); the wrappers are put back after it."""
    from opentelemetry.instrumentation.utils import unwrap

    instrumented = {name: vars(owner)[name] for name in names}
    for name in names:
        unwrap(owner, name)
    try:
        yield
    finally:
        for name, wrapper in instrumented.items():
            setattr(owner, name, wrapper)


def assert_expected_build() -> None:
    """The ``<framework>-compiled`` suites of ``scripts/run_tests.py`` (which set
    ``LOOPGUARD_EXPECT_COMPILED=1``) run on the compiled core, the others on the source:
    fail at once, rather than pass on the wrong build."""
    import otel_loopguard

    expected = os.environ.get("LOOPGUARD_EXPECT_COMPILED") == "1"
    if otel_loopguard.COMPILED is not expected:
        build = "compiled" if otel_loopguard.COMPILED else "pure Python"
        raise AssertionError(
            f"this suite expects the {'compiled' if expected else 'pure Python'} core "
            f"but imported the {build} one from {otel_loopguard.__file__}"
        )


def harness_fixtures(instrumentor_class: Any, testbed: Testbed | None = None) -> tuple[Any, ...]:
    """A suite's fixtures, in its conftest::

        instrumented, make_loopguard, loopguard, observe_loopguard = harness_fixtures(X)

    ``instrumented`` (session, autouse) installs ``X()`` on the testbed's provider;
    ``make_loopguard(mode="enforce", **settings)`` installs a fresh guard and returns its
    :class:`Harness`; ``loopguard`` and ``observe_loopguard`` are that harness in enforce
    and observe mode with default settings.
    """
    import pytest

    bed = testbed if testbed is not None else Testbed()

    @pytest.fixture(scope="session", autouse=True, name="instrumented")
    def instrumented() -> Iterator[Any]:
        assert_expected_build()
        bed.instrument(instrumentor_class())
        yield bed.instrumentor
        bed.instrumentor.uninstrument()

    @pytest.fixture(name="make_loopguard")
    def make_loopguard(caplog: Any) -> Iterator[Callable[..., Harness]]:
        caplog.set_level(logging.WARNING)
        yield lambda mode="enforce", **settings: bed.install(caplog, mode=mode, **settings)
        bed.uninstall()

    @pytest.fixture(name="loopguard")
    def loopguard(make_loopguard: Callable[..., Harness]) -> Harness:
        return make_loopguard(mode="enforce")

    @pytest.fixture(name="observe_loopguard")
    def observe_loopguard(make_loopguard: Callable[..., Harness]) -> Harness:
        return make_loopguard(mode="observe")

    return instrumented, make_loopguard, loopguard, observe_loopguard


def instrumentor_fixture(name: str, make_instrumentor: Callable[[], Any]) -> Any:
    """A fixture ``name`` for a suite that tests its framework next to another
    instrumentation (an OpenAI SDK package below it, a framework's own tracing)::

        with_openai_package = instrumentor_fixture("with_openai_package", OpenAIInstrumentor)

    ``fixture(mode=..., **settings)`` is ``make_loopguard`` with ``make_instrumentor()``
    instrumented on the same provider as well, uninstrumented after the test.
    """
    import pytest

    @pytest.fixture(name=name)
    def with_instrumentor(make_loopguard: Callable[..., Harness]) -> Iterator[Callable[..., Any]]:
        instrumentors: list[Any] = []

        def install(**settings: Any) -> Harness:
            harness = make_loopguard(**settings)
            instrumentor = make_instrumentor()
            instrumentor.instrument(tracer_provider=harness.provider)
            instrumentors.append(instrumentor)
            return harness

        yield install
        for instrumentor in instrumentors:
            instrumentor.uninstrument()

    return with_instrumentor


def openai_package_fixture() -> Any:
    """The ``with_openai_package`` fixture, for a suite that tests its framework on top of our
    OpenAI SDK package (named in its ``install-also``)::

        with_openai_package = openai_package_fixture()

    ``with_openai_package(mode=..., **settings)`` is ``make_loopguard`` with the OpenAI SDK
    package instrumented on the same provider as well, uninstrumented after the test.
    """

    def openai_instrumentor() -> Any:
        from otel_loopguard_openai import OpenAIInstrumentor

        return OpenAIInstrumentor()

    return instrumentor_fixture("with_openai_package", openai_instrumentor)
