"""The spans our gate made and fed itself, which the span processor must not feed again.

A wrapper's ``invoke_agent`` / ``execute_tool`` span, or a model-call span whose turn the
wrapper reported, is *managed*: the processor (through the span follower) skips it when it
ends. A managed tool span that is still open is also a *gate tool span*: a tool span of
another instrumentation starting inside it is the same execution and is not fed either.

Span ids are the SDK's integers. Set operations are single steps under the GIL, so the
hot path takes no lock. Bounded: a registry that nobody drains (spans that never end)
is cleared when it reaches ``max_spans``.
"""

from __future__ import annotations

from typing import Any

_MAX_MANAGED = 100_000


class ManagedSpans:
    """Registry of managed spans; implements the follower's ``GateSpans`` questions."""

    __slots__ = ("_max", "_spans", "_tools")

    def __init__(self, max_spans: int = _MAX_MANAGED) -> None:
        self._spans: set[int] = set()
        self._tools: set[int] = set()
        self._max = max_spans

    # -- marking (the guard's wrappers) ----------------------------------------------------

    def add(self, span_id: int, *, gate_tool: bool = False) -> None:
        """Mark a span the gate feeds itself (``gate_tool``: an open gate tool span)."""
        spans = self._spans
        if len(spans) >= self._max:  # no processor is removing them: stay bounded
            spans.clear()
            self._tools.clear()
        spans.add(span_id)
        if gate_tool:
            self._tools.add(span_id)

    def add_span(self, span: Any) -> None:
        """:meth:`add` for a live span (an invalid context is ignored)."""
        context = span.get_span_context()
        if context.is_valid:
            self.add(context.span_id)

    def discard(self, span_id: int) -> None:
        """Forget a span once it has ended (the processor has seen its end by then)."""
        self._spans.discard(span_id)
        self._tools.discard(span_id)

    def discard_span(self, span: Any) -> None:
        context = span.get_span_context()
        if context.is_valid:
            self.discard(context.span_id)

    # -- questions (the follower reads the two sets directly) --------------------------------

    @property
    def managed_ids(self) -> set[int]:
        """Every span the gate fed itself (a live set: read, never write)."""
        return self._spans

    @property
    def gate_tool_ids(self) -> set[int]:
        """The gate's still-open tool spans (a live set: read, never write)."""
        return self._tools

    def is_managed(self, span_id: Any) -> bool:
        return span_id in self._spans

    def __len__(self) -> int:
        return len(self._spans)
