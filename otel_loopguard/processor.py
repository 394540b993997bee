"""``LoopGuardSpanProcessor``: any GenAI span in, decisions out.

Add it to a tracer provider (``provider.add_span_processor(LoopGuardSpanProcessor())``)
or let ``opentelemetry-instrument`` do it through the ``loopguard`` instrumentor.

The processor is SDK plumbing only: a cheap filter, the span follower, the hub.

* **The filter.** Most spans of a service are not GenAI (HTTP, database, messaging). One
  set operation in C on the attribute keys and one look at the name's first letters tell
  such a span apart, at its start and at its end; it then costs nearly nothing (a trace
  with no GenAI span has no state at all).
* **The follower** (:class:`~otel_loopguard.spans.follower.SpanFollower`, shared with the
  gate and, as a class, with ``analyze`` replay): span starts and ends into run identities,
  events and run ends.
* **The hub** (:class:`~otel_loopguard.guard.LoopGuard`): the monitor the events are fed
  to, and the telemetry. A non-continue decision made just now becomes a
  ``loopguard.decision`` event on the run's still-open agent span (innermost first); when
  none is open, a zero-duration ``loopguard.decision`` span in the same trace, child of the
  span that caused it. When the outermost agent/workflow span of a run keyed by it ends,
  the run is ended; that span has already ended when a processor sees it, so its
  ``loopguard.run.state`` goes on a zero-duration ``loopguard.run`` child span (spans made
  by our own ``agent_run`` carry the attribute themselves). A run keyed by the trace ends
  with the trace's local root; a conversation outlives its traces until its idle TTL.

No hook raises: every error is caught, counted in ``loopguard.internal_errors`` and logged
once per kind. ``LoopGuardInterrupt`` is never raised here: a processor cannot interrupt;
the gate (:mod:`otel_loopguard.guard.tool_call`) does, using the monitor this processor
feeds.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from otel_loopguard.engine.decisions import Action, Decision
from otel_loopguard.engine.events import Event
from otel_loopguard.guard import LoopGuard, get_guard
from otel_loopguard.spans.classify import (
    LLM,
    OTHER,
    TOOL,
    SpanClass,
    classify_parts,
)
from otel_loopguard.spans.dialects import (
    CLASS_KEYS,
    CONVERSATION_KEY_SET,
    KIND_RULES,
    LATE_KIND_SCOPES,
)
from otel_loopguard.spans.follower import OpenAgent, SpanEnd
from otel_loopguard.spans.sdk import PLAIN_CLASSES, plain_fields
from otel_loopguard.spans.view import SpanView, from_readable_span, span_attributes
from otel_loopguard.telemetry import DECISION_SPAN, RUN_SPAN, SCOPE_NAME

_OWN_SPANS = frozenset({DECISION_SPAN, RUN_SPAN})
_SPAN_CONTEXT = trace.SpanContext
#: the dialects' kind attributes: a span carrying one says what it is
_KIND_KEYS = frozenset(key for key, _case, _kinds, _transport in KIND_RULES)
_CONTINUE = Action.CONTINUE
_START_CLASSES = {
    "execute_tool": TOOL,
    "chat": LLM,
    "text_completion": LLM,
    "generate_content": LLM,
}
#: a span with none of these attribute keys, and a name that starts with none of the
#: prefixes, is not GenAI and carries no conversation id: the filter's whole test
_FILTER_KEYS = CLASS_KEYS | CONVERSATION_KEY_SET
_NAME_PREFIXES = frozenset({"invoke_", "handoff", "agent r", "invocat"})
#: their first letters, either case: most names are rejected on the first letter alone
_NAME_FIRSTS = frozenset("iIhHaA")


class LoopGuardSpanProcessor(SpanProcessor):
    """Feeds ended GenAI spans to the loop monitor and exports its decisions.

    ``guard`` defaults to the process-wide :func:`~otel_loopguard.guard.get_guard`,
    shared with framework wrappers. ``tracer_provider`` is where zero-duration
    ``loopguard.decision`` / ``loopguard.run`` spans go; by default the global provider
    (pass it when you attach the processor to a provider that is not the global one).
    """

    def __init__(self, guard: LoopGuard | None = None, *, tracer_provider: Any = None) -> None:
        self.guard = guard if guard is not None else get_guard()
        self._follower = self.guard.follower
        self._gate_tool_ids = self._follower.gate_tool_ids
        #: False after the instrumentor's uninstrument (the SDK cannot remove a processor)
        self.enabled = True
        if tracer_provider is not None and self.guard.tracer_provider is None:
            self.guard.tracer_provider = tracer_provider

    # -- on_start ----------------------------------------------------------------------------

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        try:
            # the filter, inlined (it runs for every span of the host program)
            if span.__class__ in PLAIN_CLASSES:
                try:
                    attributes = span._attributes._dict  # type: ignore[union-attr]
                except AttributeError:
                    attributes = span_attributes(span)
                name = span._name or ""
            else:
                attributes = span_attributes(span)
                name = (span._name if plain_fields(span.__class__) else span.name) or ""
            if _FILTER_KEYS.isdisjoint(attributes) and (
                name[:1] not in _NAME_FIRSTS or name[:7].lower() not in _NAME_PREFIXES
            ):
                if not attributes:  # it may say what it is only at its end (one look)
                    scope = getattr(span, "_instrumentation_scope", None)
                    if scope is not None and scope.name in LATE_KIND_SCOPES:
                        self._start_late(span, name, parent_context)
                return  # most spans of a service: nothing to track
            if not (self.enabled and self.guard.config.enabled):
                return
            # GenAI tool and model spans by their operation name, else the full rules; a
            # handoff tool span counts as a tool span here (the follower treats both alike)
            operation = attributes.get("gen_ai.operation.name")
            span_class = _START_CLASSES.get(operation) if operation.__class__ is str else None
            if span_class is None:
                span_class = classify_parts(name, attributes)
            parent = span._parent if span.__class__ in PLAIN_CLASSES else span.parent
            local_parent = parent is not None and not (
                parent[2] if parent.__class__ is _SPAN_CONTEXT else parent.is_remote
            )
            if local_parent:
                if span_class is OTHER:
                    # among the other spans only a local root's conversation matters, and
                    # a span that may say what it is only at its end
                    self._start_late(span, name, parent_context)
                    return
                if (
                    (span_class is LLM or span_class is TOOL)
                    and not (self._follower.nested or self._gate_tool_ids)
                    and attributes.get("mcp.method.name") != "tools/call"
                    and CONVERSATION_KEY_SET.isdisjoint(attributes.keys())
                ):
                    # a model or tool span inside its trace, no gate span open, no MCP
                    # request, no conversation id: read when it ends, nothing to do now
                    return
            elif span_class is OTHER and CONVERSATION_KEY_SET.isdisjoint(attributes.keys()):
                self._start_late(span, name, parent_context)
                return
            self._on_start(span, parent_context, name, attributes, span_class, parent)
        except Exception as exc:
            self.guard.telemetry.internal_error("on_start", exc)

    def _start_late(self, span: Span, name: str, parent_context: Context | None) -> None:
        """A span without a kind yet, of an instrumentation that sets it only when the span
        ends (OpenInference's LangChain tracer) or just after it started (Langfuse): the
        follower holds the outermost one of its tree as a possible agent, and lets it go
        when, by its first child's start, it says it is none (``SpanFollower.started_late``)."""
        plain = span.__class__ in PLAIN_CLASSES
        scope = span._instrumentation_scope if plain else span.instrumentation_scope
        if scope is None or scope.name not in LATE_KIND_SCOPES:
            return
        if not (self.enabled and self.guard.config.enabled):
            return
        context = span.context
        if context is None:
            return
        parent = span._parent if plain else span.parent
        parent_id = parent.span_id if parent is not None else None
        self._follower.started_late(
            context.trace_id,
            context.span_id,
            parent_id,
            parent is not None and parent.is_remote,
            name,
            span,
            lambda: _class_now(trace.get_current_span(parent_context), parent_id),
        )

    def _on_start(
        self,
        span: Span,
        parent_context: Context | None,
        name: str,
        attributes: Any,
        span_class: SpanClass,
        parent: Any,
    ) -> None:
        follower = self._follower
        context = span.context
        if context is None:
            return
        if name in _OWN_SPANS and _scope_name(span) == SCOPE_NAME:
            return
        started = follower.started(
            context.trace_id,
            context.span_id,
            parent.span_id if parent is not None else None,
            parent is not None and parent.is_remote,
            name,
            attributes,
            span_class,
            span,
            parent_is_tool=lambda: _is_tool_span(trace.get_current_span(parent_context)),
        )
        if started is not None:
            identity = started.identity
            self.guard.monitor.start_run(
                identity.run_id, agent=started.agent, keyed_by=identity.keyed_by
            )

    # -- on_end ------------------------------------------------------------------------------

    def on_end(self, span: ReadableSpan) -> None:
        try:
            # the filter, inlined (it runs for every span of the host program)
            plain = span.__class__ in PLAIN_CLASSES
            if plain:
                try:
                    attributes = span._attributes._dict  # type: ignore[union-attr]
                except AttributeError:
                    attributes = span_attributes(span)
                name = span._name or ""
            else:
                attributes = span_attributes(span)
                plain = plain_fields(span.__class__)
                name = (span._name if plain else span.name) or ""
            if _FILTER_KEYS.isdisjoint(attributes) and (
                name[:1] not in _NAME_FIRSTS or name[:7].lower() not in _NAME_PREFIXES
            ):
                if self._follower.traces:  # a local root may end a trace-keyed run
                    self._end_other(span, plain)
                return
            guard = self.guard
            if not (self.enabled and guard.config.enabled):
                return
            span_class = classify_parts(name, attributes)
            if span_class is OTHER:
                self._end_other(span, plain)
                return
            if name in _OWN_SPANS and _scope_name(span) == SCOPE_NAME:
                return
            self._on_end(span, name, attributes, span_class, plain)
        except Exception as exc:
            self.guard.telemetry.internal_error("on_end", exc)

    def _end_other(self, span: ReadableSpan, plain: bool) -> None:
        """A span that is not GenAI ended while some trace is tracked: a local root ends a
        run keyed by its trace."""
        if not (self.enabled and self.guard.config.enabled):
            return
        context = span._context if plain else span.context
        if context is None:
            return
        parent = span._parent if plain else span.parent
        if span.name in _OWN_SPANS and _scope_name(span) == SCOPE_NAME:
            return
        state = self._follower.ended_other(
            context.trace_id, context.span_id, parent is None or parent.is_remote
        )
        if state is not None:
            self._end_trace_run(span, state.hex_trace_id, None)

    def _on_end(
        self,
        span: ReadableSpan,
        name: str,
        attributes: Any,
        span_class: SpanClass,
        plain: bool,
    ) -> None:
        """A GenAI span ended: the follower says what it means; feed, export, end runs."""
        guard = self.guard
        telemetry = guard.telemetry
        started = telemetry.clock()
        context = span._context if plain else span.context
        if context is None:
            return
        parent = span._parent if plain else span.parent
        # a SpanContext is a tuple (trace id, span id, remote, ...): its fields by index,
        # not through four Python properties
        if context.__class__ is _SPAN_CONTEXT:
            trace_id, span_id = context[0], context[1]
        else:
            trace_id, span_id = context.trace_id, context.span_id
        if parent is None:
            parent_id, parent_remote = None, False
        elif parent.__class__ is _SPAN_CONTEXT:
            parent_id, parent_remote = parent[1], parent[2]
        else:
            parent_id, parent_remote = parent.span_id, parent.is_remote
        ended = self._follower.ended(
            trace_id,
            span_id,
            parent_id,
            parent_remote,
            name,
            attributes,
            span_class,
            span,
        )
        events = ended.events
        if events:  # fed here, not in a method of its own: this runs for every GenAI span
            observe = guard.observe
            for event in events:
                decision, fresh = observe(event)
                if fresh:
                    self._export(decision, event, ended, span)
        if ended.ended_root is not None and not ended.managed:
            self._end_agent_run(ended, span)
        if ended.trace_ended:
            self._end_trace_run(span, ended.state.hex_trace_id, ended.view)
        if started >= telemetry.next_processing_sample.get(span_class, 0.0):  # else not sampled
            telemetry.record_processing(telemetry.clock() - started, span_class)

    def _end_trace_run(self, span: ReadableSpan, trace_hex: str, view: SpanView | None) -> None:
        """The trace's local root ended: end the run keyed by the trace, count its state."""
        if view is None:
            view = from_readable_span(span, detection_only=True, trace_id=trace_hex)
        guard = self.guard
        summary = guard.monitor.end_run(trace_hex)
        if summary is not None:
            guard.deliveries.run_ended(trace_hex)
            guard.telemetry.record_run_end(guard.run_end_state(summary, error=view.is_error))

    def _export(self, decision: Decision, event: Event, ended: SpanEnd, span: ReadableSpan) -> None:
        guard = self.guard
        telemetry = guard.telemetry
        context = trace.set_span_in_context(trace.NonRecordingSpan(span.context))
        telemetry.record_decision(decision, event, context)
        if decision.action is Action.STOP:
            guard.stop_unenforceable(decision)  # enforce mode with no gate: said once
            # one truth: the run will end stop_not_enforced, and so its decision says
            decision = guard.as_exported(decision)
        agent: OpenAgent | None = ended.actor
        if agent is not None and telemetry.add_decision_event(agent.span, decision, event):
            return
        view = ended.view
        end_ns = view.end_time_unix_nano if view is not None else span.end_time
        telemetry.emit_decision_span(guard.tracer(), decision, event, span.context, end_ns)

    def _end_agent_run(self, ended: SpanEnd, span: ReadableSpan) -> None:
        """The outermost agent span of a run ended: end a root-keyed run, export its state."""
        agent = ended.ended_root
        if agent is None or agent.managed:
            return  # our agent_run ends its run and sets loopguard.run.state itself
        guard = self.guard
        identity = ended.identity
        if agent.started_run is not None and agent.started_run != identity.run_id:
            # its start began a run before its conversation id was known (Google ADK sets
            # it when its spans end): the run was the conversation's, the empty one goes
            guard.monitor.end_run(agent.started_run)
        view: SpanView = ended.view or from_readable_span(
            span, detection_only=True, trace_id=ended.state.hex_trace_id
        )
        ends = identity.keyed_by.ends_with_root_span
        if ends:
            summary = guard.monitor.end_run(identity.run_id)
        else:
            summary = guard.monitor.run_snapshot(identity.run_id)
        state = guard.run_end_state(summary, error=view.is_error)
        context = trace.set_span_in_context(trace.NonRecordingSpan(span.context))
        if ends:
            guard.deliveries.run_ended(identity.run_id)
            guard.telemetry.record_run_end(state, context)
        guard.telemetry.emit_run_span(
            guard.tracer(), identity.run_id, state, span.context, view.end_time_unix_nano, summary
        )

    # -- lifecycle -----------------------------------------------------------------------------

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _scope_name(span: Any) -> str | None:
    scope = span.instrumentation_scope
    return scope.name if scope is not None else None


def _class_now(span: Any, span_id: Any) -> SpanClass | None:
    """What a live span (the parent ``span_id``) says it is by its kind attribute by now:
    None while it has none (or it is another span)."""
    name = getattr(span, "name", None)  # a non-recording span has none
    if not isinstance(name, str) or span.get_span_context().span_id != span_id:
        return None
    attributes = span_attributes(span)
    if _KIND_KEYS.isdisjoint(attributes):
        return None
    return classify_parts(name, attributes)


def _is_tool_span(span: Any) -> bool:
    """A live (recording SDK) span that is a tool or handoff span in any dialect."""
    name = getattr(span, "name", None)  # a non-recording span has none
    if not isinstance(name, str):
        return False
    return classify_parts(name, span_attributes(span)) in (SpanClass.TOOL, SpanClass.HANDOFF)
