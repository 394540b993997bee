"""``LoopGuardSpanProcessor``: any GenAI span in, decisions out.

Add it to a tracer provider (``provider.add_span_processor(LoopGuardSpanProcessor())``)
or let ``opentelemetry-instrument`` do it through the ``loopguard`` instrumentor.

* ``on_start`` keeps, per trace, what is open: the local root span, agent and workflow
  spans (the outermost one keys the run; the innermost one receives decision events),
  tool spans, and the conversation id. Bounded: at most ``max(OTEL_LOOPGUARD_MAX_RUNS,
  1000)`` traces, least recently used dropped first.
* ``on_end`` classifies the span (several instrumentations set attributes late, so not at
  start), maps it to events with :mod:`otel_loopguard.spans.mapping` and feeds the monitor.
  A non-continue decision made just now becomes a ``loopguard.decision`` event on the
  run's still-open agent span (innermost first); when none is open, a zero-duration
  ``loopguard.decision`` span in the same trace, child of the span that caused it.
* When the outermost agent/workflow span of a run keyed by it ends, the run is ended. That
  span has already ended when a processor sees it, so it cannot take attributes any more:
  its ``loopguard.run.state`` goes on a zero-duration ``loopguard.run`` child span (spans
  made by our own ``agent_run`` carry the attribute themselves). A run keyed by the trace
  ends with the trace's local root; a conversation outlives its traces until its idle TTL.
* A tool span whose direct child tool span was already fed describes the same call twice
  (a framework span around an MCP client span, say): the inner one counts.
* Spans our gate made and fed itself (``enforcement``) are skipped.

No hook raises: every error is caught, counted in ``loopguard.internal_errors`` and logged
once per kind. ``LoopGuardInterrupt`` is never raised here: a processor cannot interrupt;
the gate in :mod:`otel_loopguard.guard` does, using the monitor this processor feeds.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from otel_loopguard.engine.decisions import Action, Decision, RunEndState
from otel_loopguard.engine.events import Event
from otel_loopguard.engine.run_identity import run_identity
from otel_loopguard.guard import LoopGuard, get_guard
from otel_loopguard.guard.model_turns import mark_reported
from otel_loopguard.spans.follower import OpenAgent, TraceState
from otel_loopguard.spans.mapping import (
    SpanClass,
    agent_name,
    classify_parts,
    conversation_in,
    is_mcp_tool_request,
    span_to_events,
)
from otel_loopguard.spans.view import (
    SpanView,
    detection_view,
    from_readable_span,
    span_attributes,
)
from otel_loopguard.telemetry import DECISION_SPAN, RUN_SPAN, SCOPE_NAME

_OWN_SPANS = frozenset({DECISION_SPAN, RUN_SPAN})
_OTHER = SpanClass.OTHER
_TOOL = SpanClass.TOOL
_HANDOFF = SpanClass.HANDOFF
_LLM = SpanClass.LLM
_RESPONSE_ID = "gen_ai.response.id"
_CONTINUE = Action.CONTINUE
_START_CLASSES = {
    "execute_tool": _TOOL,
    "chat": _LLM,
    "text_completion": _LLM,
    "generate_content": _LLM,
}
_AGENT = SpanClass.AGENT
_WORKFLOW = SpanClass.WORKFLOW


class LoopGuardSpanProcessor(SpanProcessor):
    """Feeds ended GenAI spans to the loop monitor and exports its decisions.

    ``guard`` defaults to the process-wide :func:`~otel_loopguard.guard.get_guard`,
    shared with framework wrappers. ``tracer_provider`` is where zero-duration
    ``loopguard.decision`` / ``loopguard.run`` spans go; by default the global provider
    (pass it when you attach the processor to a provider that is not the global one).
    """

    def __init__(self, guard: LoopGuard | None = None, *, tracer_provider: Any = None) -> None:
        self.guard = guard if guard is not None else get_guard()
        #: False after the instrumentor's uninstrument (the SDK cannot remove a processor)
        self.enabled = True
        if tracer_provider is not None and self.guard.tracer_provider is None:
            self.guard.tracer_provider = tracer_provider

    # -- on_start ----------------------------------------------------------------------------

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        try:
            guard = self.guard
            if not (self.enabled and guard.config.enabled):
                return
            if _plain_fields(span.__class__):
                name = span._name or ""
                parent = span._parent
            else:
                name = span.name or ""
                parent = span.parent
            attributes = span_attributes(span)
            # GenAI tool and model spans by their operation name, else the full rules; a
            # handoff tool span counts as a tool span here (on_start treats both alike)
            operation = attributes.get("gen_ai.operation.name")
            span_class = _START_CLASSES.get(operation) if operation.__class__ is str else None
            if span_class is None:
                span_class = classify_parts(name, attributes)
            if parent is not None and not parent.is_remote:
                if span_class is _OTHER:
                    return  # most spans of a service: nothing to track
                if (
                    (span_class is _LLM or span_class is _TOOL)
                    and not (guard._managed_tools or guard._gate_nested)
                    and attributes.get("mcp.method.name") != "tools/call"
                    and conversation_in(attributes) is None
                ):
                    # a model or tool span inside its trace, no gate span open, no MCP
                    # request, no conversation id: read when it ends, nothing to do now
                    return
            self._on_start(span, parent_context, name, attributes, span_class, parent)
        except Exception as exc:
            self.guard.telemetry.internal_error("on_start", exc)

    def _on_start(
        self,
        span: Span,
        parent_context: Context | None,
        name: str,
        attributes: Mapping[str, Any],
        span_class: SpanClass,
        parent: Any,
    ) -> None:
        guard = self.guard
        context = span.context
        if context is None:
            return
        if name in _OWN_SPANS and _scope_name(span) == SCOPE_NAME:
            return
        is_root = parent is None or parent.is_remote
        if (
            parent is not None
            and (span_class is _TOOL or span_class is _HANDOFF)
            and (
                guard._managed_tools
                or guard._gate_nested
                or attributes.get("mcp.method.name") == "tools/call"
            )
        ):
            # inside a gate tool span, or an MCP request (possibly the transport of an
            # enclosing tool span); with no gate span open anywhere and no MCP attribute,
            # the check below cannot mark anything. Also with a remote parent: an
            # in-process MCP server's span continues the client's request span from the
            # propagated context
            guard.enter_gate_nested(
                context.span_id,
                parent.span_id,
                transport_of_parent=is_mcp_tool_request(attributes)
                and _is_tool_span(trace.get_current_span(parent_context)),
            )
        run_root = span_class is _AGENT or span_class is _WORKFLOW
        conversation = conversation_in(attributes)
        tracker = guard.tracker
        if not (is_root or run_root):
            # tool and model spans are read when they end; only a conversation id they
            # carry from the start matters now (it keys the run of the whole trace)
            if conversation:
                state = tracker.get(context.trace_id)
                if state is None:
                    with tracker.lock:
                        state = tracker.get_or_create(context.trace_id)
                if state.conversation is None:
                    state.conversation = conversation
            return
        if not (run_root or conversation):
            # a local root that is not GenAI (an HTTP server span, say): noted, without a
            # state, until a GenAI span of its trace needs one
            tracker.note_root(context.trace_id, context.span_id)
            return
        with tracker.lock:
            state = tracker.get_or_create(context.trace_id)
            if is_root and state.local_root is None:
                state.local_root = context.span_id
            if conversation and state.conversation is None:
                state.conversation = conversation
            if not run_root:
                return
            managed = guard.is_managed(context.span_id)
            outermost = not state.agents
            view = SpanView(name, "", "", attributes=attributes)
            state.add_agent(OpenAgent(context.span_id, agent_name(view), span, managed))
        if outermost and not managed:
            identity = run_identity(
                state.hex_trace_id,
                conversation=state.conversation,
                root_span_id=format(context.span_id, "016x"),
            )
            guard.monitor.start_run(
                identity.run_id, agent=agent_name(view), keyed_by=identity.keyed_by
            )

    # -- on_end ------------------------------------------------------------------------------

    def on_end(self, span: ReadableSpan) -> None:
        try:
            guard = self.guard
            if not (self.enabled and guard.config.enabled):
                return
            plain = _plain_fields(span.__class__)
            if plain:
                name = span._name or ""
                context = span._context
            else:
                name = span.name or ""
                context = span.context
            if context is None:
                return
            attributes = span_attributes(span)
            span_class = classify_parts(name, attributes)
            if span_class is _OTHER:
                # not GenAI: only the trace bookkeeping (a local root ends a trace-keyed
                # run); most such traces have no state at all
                tracker = guard.tracker
                state = tracker.get(context.trace_id)
                if state is not None:
                    self._end_other(span, name, context, state)
                elif tracker.roots:
                    tracker.end_root(context.trace_id, context.span_id)
                return
            if name in _OWN_SPANS and _scope_name(span) == SCOPE_NAME:
                return
            self._on_end(span, name, attributes, span_class, context, plain)
        except Exception as exc:
            self.guard.telemetry.internal_error("on_end", exc)

    def _end_other(self, span: ReadableSpan, name: str, context: Any, state: TraceState) -> None:
        """A span that is not GenAI ended in a trace we track: is it the local root?"""
        if name in _OWN_SPANS and _scope_name(span) == SCOPE_NAME:
            return
        span_id = context.span_id
        state.fed_tool_parents.discard(span_id)
        tracker = self.guard.tracker
        if state.local_root != span_id or tracker.drop(context.trace_id) is not state:
            return
        if state.trace_run_used:
            view = from_readable_span(span, detection_only=True, trace_id=state.hex_trace_id)
            summary = self.guard.monitor.end_run(view.trace_id)
            if summary is not None:
                self.guard.telemetry.record_run_end(_end_state(view, summary))

    def _on_end(
        self,
        span: ReadableSpan,
        name: str,
        attributes: Mapping[str, Any],
        span_class: SpanClass,
        context: Any,
        plain: bool,
    ) -> None:
        """A GenAI span ended. No lock on the path of a tool or model span: a trace's state
        is read and changed one atomic step at a time (see ``TraceState``); only agent
        spans starting and ending take the tracker's lock."""
        guard = self.guard
        started = time.perf_counter()
        trace_id = context.trace_id
        span_id = context.span_id
        tracker = guard.tracker
        state = tracker.tracked(trace_id)
        if state is None:
            state = TraceState(trace_id)  # evicted or started before us: a scratch state
        managed = span_id in guard._managed
        fed_tool_parents = state.fed_tool_parents
        duplicate = False
        if span_class is _TOOL or span_class is _HANDOFF:
            duplicate = span_id in fed_tool_parents
            parent = span._parent if plain else span.parent
            if guard._gate_nested and guard.leave_gate_nested(span_id):
                # inside a wrapper's gate span (directly or through other tool spans,
                # e.g. an MCP library's span, the SDK's MCP send, an in-process
                # server's span), or an MCP request inside a tool span: the enclosing
                # span reports this execution, with its arguments
                duplicate = True
            elif parent is not None and not parent.is_remote:
                parent_id = parent.span_id
                if parent_id in guard._managed_tools:  # inside a gate tool span
                    duplicate = True
                else:
                    fed_tool_parents.add(parent_id)
        fed_tool_parents.discard(span_id)
        conversation = conversation_in(attributes) or state.conversation
        agents = state.agents
        root = agents[0] if agents else None
        ending_agent: OpenAgent | None = None
        run_root = span_class is _AGENT or span_class is _WORKFLOW
        if run_root:
            with tracker.lock:
                ending_agent = state.remove_agent(span_id)
                agents = state.agents
        innermost = agents[-1] if agents else None
        is_local_root = state.local_root == span_id
        if is_local_root:
            tracker.drop(trace_id)
        identity = state.identity(conversation, root)

        if span_class is _LLM and not managed:
            # a model span of another instrumentation ended inside a framework wrapper's
            # model turn (this runs in the thread and context that ended the span)
            mark_reported()
            # or after a wrapper reported this very answer and closed its turn (LiteLLM's
            # own OpenTelemetry callback makes its span later, in a worker thread or task)
            duplicate = not guard.reported_answers.first_report(
                identity.run_id, attributes.get(_RESPONSE_ID), by_wrapper=False
            )
        view: SpanView | None = None
        if not (managed or duplicate or run_root):
            if plain:
                status, end_time = span._status, span._end_time
            else:
                status, end_time = span.status, span.end_time
            view = detection_view(
                span,
                name,
                attributes,
                state.hex_trace_id,
                format(span_id, "016x"),
                status,
                end_time,
            )
            events = span_to_events(
                view,
                identity.run_id,
                guard.config,
                actor=innermost.name if innermost is not None else None,
                span_class=span_class,
            )
            if events:
                if identity.keyed_by == "trace":
                    state.trace_run_used = True
                self._feed(events, view, span, innermost)
        if ending_agent is not None and root is ending_agent and not managed:
            if view is None:
                view = from_readable_span(span, detection_only=True, trace_id=state.hex_trace_id)
            self._end_agent_run(view, span, identity, ending_agent)
        if is_local_root and state.trace_run_used:
            if view is None:
                view = from_readable_span(span, detection_only=True, trace_id=state.hex_trace_id)
            summary = guard.monitor.end_run(view.trace_id)
            if summary is not None:
                guard.telemetry.record_run_end(_end_state(view, summary))
        guard.telemetry.record_processing(time.perf_counter() - started, span_class)

    def _feed(
        self, events: list[Event], view: SpanView, span: ReadableSpan, agent: OpenAgent | None
    ) -> None:
        # LoopGuard.observe inlined (two events per tool span): a decision is fresh when
        # the guard's listener heard it during this call; listeners only hear
        # non-continue decisions, so a continue needs no look at the thread-local
        guard = self.guard
        observe = guard.monitor.observe
        fresh = guard._fresh
        fresh.decision = None
        for event in events:
            decision = observe(event)
            if decision.action is not _CONTINUE:
                is_fresh = fresh.decision is decision
                fresh.decision = None
                if is_fresh:
                    self._export(decision, event, view, span, agent)

    def _export(
        self,
        decision: Decision,
        event: Event,
        view: SpanView,
        span: ReadableSpan,
        agent: OpenAgent | None,
    ) -> None:
        guard = self.guard
        telemetry = guard.telemetry
        context = trace.set_span_in_context(trace.NonRecordingSpan(span.context))
        telemetry.record_decision(decision, event, context)
        if agent is not None and telemetry.add_decision_event(agent.span, decision, event):
            return
        telemetry.emit_decision_span(
            guard.tracer(), decision, event, span.context, view.end_time_unix_nano
        )

    def _end_agent_run(
        self, view: SpanView, span: ReadableSpan, identity: Any, agent: OpenAgent
    ) -> None:
        """The outermost agent span of a run ended: end a root-keyed run, export its state."""
        if agent.managed:
            return  # our agent_run ends its run and sets loopguard.run.state itself
        guard = self.guard
        if identity.keyed_by == "root":
            summary = guard.monitor.end_run(identity.run_id)
        else:
            summary = guard.monitor.run_snapshot(identity.run_id)
        state = _end_state(view, summary)
        context = trace.set_span_in_context(trace.NonRecordingSpan(span.context))
        if identity.keyed_by == "root":
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


def _end_state(view: SpanView, summary: Any) -> RunEndState:
    """A stopped run's stop state wins; else an error status is ``error``; else completed."""
    if summary is not None and summary.stopped:
        stop = summary.first_stop.decision if summary.first_stop is not None else None
        return (stop.end_state if stop is not None else None) or RunEndState.STOPPED
    return RunEndState.ERROR if view.is_error else RunEndState.COMPLETED


def _is_tool_span(span: Any) -> bool:
    """A live (recording SDK) span that is a tool or handoff span in any dialect."""
    name = getattr(span, "name", None)  # a non-recording span has none
    if not isinstance(name, str):
        return False
    return classify_parts(name, span_attributes(span)) in (SpanClass.TOOL, SpanClass.HANDOFF)


def _fields_are_plain() -> bool:
    """True when the SDK's ``ReadableSpan`` properties return its private fields as they are.

    Each property read is a Python call; the hooks read five of them per span. Checked
    once on a probe span, so an SDK that stores them differently gets the properties.
    """
    try:
        from opentelemetry.trace import SpanContext, Status, StatusCode

        probe = ReadableSpan(
            "probe",
            SpanContext(1, 2, False),
            SpanContext(1, 3, True),
            status=Status(StatusCode.ERROR, "probe"),
            end_time=7,
        )
        return (
            probe._name is probe.name
            and probe._context is probe.context
            and probe._parent is probe.parent
            and probe._status is probe.status
            and probe._end_time is probe.end_time
        )
    except Exception:
        return False


_SDK_FIELDS_PLAIN = _fields_are_plain()
_PROPERTIES = ("name", "context", "parent", "status", "end_time")
_plain_classes: dict[type, bool] = {}


def _plain_fields(cls: type) -> bool:
    """Whether spans of ``cls`` can be read through the SDK's private fields: the SDK's
    own classes (``ReadableSpan``, the live ``Span``) and subclasses that keep its
    properties; anything else is read through its properties."""
    plain = _plain_classes.get(cls)
    if plain is None:
        plain = _SDK_FIELDS_PLAIN and all(
            getattr(cls, name, None) is ReadableSpan.__dict__[name] for name in _PROPERTIES
        )
        if len(_plain_classes) < 64:  # a handful of span classes; stay bounded
            _plain_classes[cls] = plain
    return plain
