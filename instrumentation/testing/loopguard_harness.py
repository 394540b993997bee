"""Test harness shared by the instrumentation packages' test suites (not shipped).

A real OpenTelemetry SDK tracer provider for the session (instrumentors patch classes once
per process), a fresh :class:`~otel_loopguard.enforcement.LoopGuard` per test in the mode
the test asks for, the exported spans, and a ledger of span starts and ends: every span
must end exactly once. Free of framework imports; each suite's ``conftest.py`` adds this
folder to ``sys.path``.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_loopguard.config import LoopGuardConfig
from otel_loopguard.enforcement import LoopGuard, set_guard
from otel_loopguard.processor import LoopGuardSpanProcessor


class SpanCounter(SpanProcessor):
    """Counts ``on_start`` and ``on_end`` per span id: every span must end exactly once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.started: Counter[int] = Counter()
        self.ended: Counter[int] = Counter()
        self.names: dict[int, str] = {}

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        with self.lock:
            self.started[span.context.span_id] += 1
            self.names[span.context.span_id] = span.name

    def on_end(self, span: ReadableSpan) -> None:
        with self.lock:
            self.ended[span.context.span_id] += 1

    def reset(self) -> None:
        with self.lock:
            self.started.clear()
            self.ended.clear()
            self.names.clear()


class SwitchableProcessor(SpanProcessor):
    """Forwards to the current test's ``LoopGuardSpanProcessor`` (providers cannot drop one)."""

    def __init__(self) -> None:
        self.inner: SpanProcessor | None = None

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        if self.inner is not None:
            self.inner.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        if self.inner is not None:
            self.inner.on_end(span)


@dataclass
class GuardHarness:
    guard: LoopGuard
    exporter: Any
    counter: SpanCounter
    switch: SwitchableProcessor
    caplog: Any
    provider: Any = None
    decisions: list[Any] = field(default_factory=list)

    @classmethod
    def install(
        cls,
        provider: Any,
        exporter: Any,
        counter: SpanCounter,
        switch: SwitchableProcessor,
        caplog: Any,
        *,
        mode: str,
        **settings: Any,
    ) -> GuardHarness:
        config = LoopGuardConfig(mode=mode, **settings)
        guard = LoopGuard(config, tracer_provider=provider)
        set_guard(guard)
        switch.inner = LoopGuardSpanProcessor(guard, tracer_provider=provider)
        exporter.clear()
        counter.reset()
        harness = cls(guard, exporter, counter, switch, caplog, provider)
        guard.on_decision(lambda decision, event: harness.decisions.append(decision))
        return harness

    def uninstall(self) -> None:
        self.switch.inner = None
        set_guard(None)

    def app_tracer(self) -> Any:
        """A tracer for the application's own spans (a hand-written agent loop, say)."""
        return self.provider.get_tracer("application")

    # -- spans -------------------------------------------------------------------------------

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def tool_spans(self, tool: str | None = None) -> list[ReadableSpan]:
        return [
            s
            for s in self.spans()
            if s.attributes.get("gen_ai.operation.name") == "execute_tool"
            and (tool is None or s.attributes.get("gen_ai.tool.name") == tool)
        ]

    def agent_spans(self) -> list[ReadableSpan]:
        return [
            s for s in self.spans() if s.attributes.get("gen_ai.operation.name") == "invoke_agent"
        ]

    @staticmethod
    def decisions_on(span: ReadableSpan, action: str | None = None) -> list[Any]:
        return [
            e
            for e in span.events
            if e.name == "loopguard.decision"
            and (action is None or e.attributes.get("loopguard.action") == action)
        ]

    @staticmethod
    def vetoed_calls(tool_spans: list[ReadableSpan]) -> int:
        """Tool spans whose tool never ran: the pre-call veto or the call-time STOP."""
        return sum(1 for s in tool_spans if s.attributes.get("error.type") == "LoopGuardInterrupt")

    def assert_every_span_ended_once(self) -> None:
        counter = self.counter
        with counter.lock:
            open_spans = [
                counter.names[i] for i, n in counter.started.items() if counter.ended[i] != 1
            ]
        assert not open_spans, f"spans not ended exactly once: {open_spans}"
        twice = [r for r in self.caplog.records if "ended span" in r.getMessage()]
        assert not twice, f"a span was ended twice: {twice[0].getMessage()}"


class Testbed:
    """The session's provider and processors; hands out one :class:`GuardHarness` per test."""

    def __init__(self) -> None:
        self.provider = TracerProvider()
        self.exporter = InMemorySpanExporter()
        self.counter = SpanCounter()
        self.switch = SwitchableProcessor()
        self.provider.add_span_processor(self.counter)
        self.provider.add_span_processor(self.switch)
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def instrumented(self, instrumentor: Any) -> Iterator[Any]:
        """Body of a session fixture: instrument with this provider, uninstrument at the end."""
        instrumentor.instrument(tracer_provider=self.provider)
        yield instrumentor
        instrumentor.uninstrument()

    def guards(self, caplog: Any) -> Iterator[Callable[..., GuardHarness]]:
        """Body of a per-test fixture: ``install(mode="enforce", **settings)``."""
        caplog.set_level(logging.WARNING)
        harnesses: list[GuardHarness] = []

        def install(mode: str = "enforce", **settings: Any) -> GuardHarness:
            harness = GuardHarness.install(
                self.provider,
                self.exporter,
                self.counter,
                self.switch,
                caplog,
                mode=mode,
                **settings,
            )
            harnesses.append(harness)
            return harness

        yield install
        for harness in harnesses:
            harness.uninstall()
