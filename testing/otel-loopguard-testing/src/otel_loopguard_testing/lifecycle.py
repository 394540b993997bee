"""Span lifecycle: every span started ends exactly once."""

from __future__ import annotations

import threading
from collections import Counter

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor


class SpanLifecycle(SpanProcessor):
    """Counts ``on_start`` and ``on_end`` per span id, to assert that every span started
    ended exactly once. The SDK calls ``on_end`` once per span and only logs a second
    ``end()``; :meth:`Harness.assert_every_span_ended_once` checks that log too."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.started: Counter[int] = Counter()
        self.ended: Counter[int] = Counter()
        self.names: dict[int, str] = {}

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        with self._lock:
            self.started[span.context.span_id] += 1
            self.names[span.context.span_id] = span.name

    def on_end(self, span: ReadableSpan) -> None:
        with self._lock:
            self.ended[span.context.span_id] += 1

    def reset(self) -> None:
        with self._lock:
            self.started.clear()
            self.ended.clear()
            self.names.clear()

    def open_spans(self) -> list[str]:
        """Names of the spans started and not ended, sorted."""
        with self._lock:
            return sorted(self.names[sid] for sid in self.started if self.ended[sid] == 0)

    def not_ended_exactly_once(self) -> list[str]:
        """Names of the spans started since :meth:`reset` and not ended once, and of any
        span ended more than once."""
        with self._lock:
            wrong = {sid for sid, n in self.started.items() if n != 1 or self.ended[sid] != 1}
            wrong.update(sid for sid, n in self.ended.items() if n > 1)
            return sorted(self.names.get(sid, "?") for sid in wrong)
