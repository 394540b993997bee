"""The enforcement gate: what framework wrappers and hand-written agents call.

One process-wide :class:`LoopGuard` (:func:`get_guard`) holds the monitor, the telemetry
and the per-trace bookkeeping that the span processor shares. Wrappers use two context
managers:

* :meth:`LoopGuard.agent_run` makes an ``invoke_agent`` span, gives the run its identity
  (conversation id, else this outermost agent span) and ends the span with
  ``loopguard.run.state``;
* :meth:`LoopGuard.tool_call` makes an ``execute_tool`` span and is the gate: entering it
  checks pre-flight limits and vetoes a stopped run (in ``enforce`` mode the tool never
  runs); the call itself is observed before the tool runs, so the third identical call
  is stopped before it executes; leaving it observes the result or error, adds the
  ``loopguard.decision`` event to the still-open span, ends the span exactly once, then
  raises :class:`~otel_loopguard.decisions.LoopGuardInterrupt` at STOP in ``enforce`` mode.

``LoopGuardInterrupt`` derives from ``BaseException`` because frameworks catch
``Exception`` around tools and hand it back to the model, which would let the loop go on.
In ``observe`` mode nothing is ever raised. Internal errors never reach the caller: they
are counted in ``loopguard.internal_errors`` and logged once.

Both context managers are synchronous and never await, so they work in ``async`` code
too; the current run travels in a :class:`contextvars.ContextVar` (copied into asyncio
tasks) and, for spans made by other instrumentations, through the span context.
"""

from __future__ import annotations

import contextvars
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from opentelemetry import baggage, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from otel_loopguard.config import LoopGuardConfig
from otel_loopguard.decisions import Action, Decision, LoopGuardInterrupt, RunEndState
from otel_loopguard.events import (
    ErrorInfo,
    Event,
    EventKind,
    optional_text,
    run_key,
    tool_call,
    tool_error,
    tool_result,
)
from otel_loopguard.model_turn import (
    ModelTurn,
    ReportedAnswers,
    enter_run_scope,
    leave_run_scope,
    mark_reported,
    open_turn,
)
from otel_loopguard.span_mapping import (
    CALL_NEAR_KEY_ATTRIBUTE,
    CALL_SIGNATURE_ATTRIBUTE,
    RESULT_NEAR_KEY_ATTRIBUTE,
    RESULT_SIGNATURE_ATTRIBUTE,
    RunIdentity,
    handoff_event,
    handoff_target,
    run_identity,
)
from otel_loopguard.telemetry import RUN_STATE_ATTRIBUTE, SCOPE_NAME, Telemetry

DecisionCallback = Callable[[Decision, Event], None]

_CONTENT_ATTRIBUTE_MAX_CHARS = 8_192
_BAGGAGE_CONVERSATION_KEYS = ("gen_ai.conversation.id", "session.id")
_MAX_MANAGED = 100_000
_CONTINUE = Action.CONTINUE


# ------------------------------------------------------------------------------------------
# per-trace bookkeeping shared by the processor and the gate


@dataclass(slots=True)
class OpenAgent:
    """An agent or workflow span that has started and not ended yet."""

    span_id: int
    name: str | None
    span: Any  # the live SDK span (to add decision events to) or None
    managed: bool


class TraceState:
    """What is open in one trace: its local root, agent spans, conversation.

    Written without a lock where one step is one atomic operation under the GIL (a set's
    ``add``/``discard``, an attribute store): a tool span's end, the common case, then
    touches no lock that other threads contend for. ``agents`` is a tuple replaced whole
    (under the tracker's lock, when an agent span starts or ends), so a reader takes one
    consistent snapshot by reading the attribute once.
    """

    __slots__ = (
        "_hex_trace_id",
        "_identity",
        "agents",
        "conversation",
        "fed_tool_parents",
        "local_root",
        "trace_id",
        "trace_run_used",
    )

    def __init__(self, trace_id: int = 0) -> None:
        self.trace_id = trace_id
        self.local_root: int | None = None
        self.agents: tuple[OpenAgent, ...] = ()
        # span ids that have a tool span child already fed (its parent must not be fed again)
        self.fed_tool_parents: set[int] = set()
        self.conversation: str | None = None
        self.trace_run_used = False
        self._hex_trace_id: str | None = None
        # (conversation, root agent, RunIdentity) of the last span: most spans of a trace
        # share both, and the identity's strings are then not formatted again
        self._identity: tuple[str | None, OpenAgent | None, RunIdentity] | None = None

    def root_agent(self) -> OpenAgent | None:
        agents = self.agents
        return agents[0] if agents else None

    def innermost_agent(self) -> OpenAgent | None:
        agents = self.agents
        return agents[-1] if agents else None

    def add_agent(self, agent: OpenAgent) -> None:
        """Call with the tracker's lock held."""
        self.agents = (*self.agents, agent)

    def remove_agent(self, span_id: int) -> OpenAgent | None:
        """The open agent span ``span_id``, taken out; call with the tracker's lock held."""
        agents = self.agents
        for index, agent in enumerate(agents):
            if agent.span_id == span_id:
                self.agents = agents[:index] + agents[index + 1 :]
                return agent
        return None

    @property
    def hex_trace_id(self) -> str:
        hex_id = self._hex_trace_id
        if hex_id is None:
            hex_id = self._hex_trace_id = format(self.trace_id, "032x")
        return hex_id

    def identity(self, conversation: str | None, root: OpenAgent | None) -> RunIdentity:
        """:func:`~otel_loopguard.span_mapping.run_identity` of a span in this trace, given
        its conversation and the outermost open agent span; the last answer is reused."""
        cached = self._identity
        if cached is not None and cached[1] is root and cached[0] == conversation:
            return cached[2]
        identity = run_identity(
            self.hex_trace_id,
            conversation=conversation,
            root_span_id=format(root.span_id, "016x") if root is not None else None,
        )
        self._identity = (conversation, root, identity)
        return identity


class TraceTracker:
    """Bounded map trace id -> :class:`TraceState` (oldest dropped first).

    Only the processor's ``on_start``/``on_end`` and the gate touch it; all methods are
    O(1). ``get`` and ``drop`` are single dictionary operations (atomic under the GIL) and
    take no lock; ``lock`` serializes ``get_or_create`` (look-up, insert, eviction) and the
    changes of a trace's open agent spans.

    Most traces of a service have no GenAI span at all: their local root is only noted
    (:meth:`note_root`, one dictionary entry) and a state is made when a GenAI span of the
    trace, or the gate, first needs one (:meth:`tracked`).
    """

    def __init__(self, max_traces: int = 10_000) -> None:
        self._traces: OrderedDict[int, TraceState] = OrderedDict()
        #: trace id -> local root span id, for traces that have no state (yet)
        self.roots: dict[int, int] = {}
        self._max = max_traces
        self.lock = threading.Lock()
        self.dropped = 0

    def get(self, trace_id: int) -> TraceState | None:
        return self._traces.get(trace_id)

    def tracked(self, trace_id: int) -> TraceState | None:
        """The trace's state; made now if only its local root was noted so far."""
        state = self._traces.get(trace_id)
        if state is None and trace_id in self.roots:
            with self.lock:
                state = self.get_or_create(trace_id)
        return state

    def get_or_create(self, trace_id: int) -> TraceState:
        """Call with ``lock`` held."""
        traces = self._traces
        state = traces.get(trace_id)
        if state is None:
            state = TraceState(trace_id)
            state.local_root = self.roots.pop(trace_id, None)
            traces[trace_id] = state
            if len(traces) > self._max:
                traces.popitem(last=False)
                self.dropped += 1
        return state

    def note_root(self, trace_id: int, span_id: int) -> None:
        """The local root of a trace started; the first one noted counts."""
        state = self._traces.get(trace_id)
        if state is not None:
            if state.local_root is None:
                state.local_root = span_id
            return
        roots = self.roots
        roots.setdefault(trace_id, span_id)
        if len(roots) > self._max:  # roots that never end: stay bounded
            with self.lock:
                while len(roots) > self._max:
                    try:  # the oldest; other threads may end roots meanwhile (no lock there)
                        roots.pop(next(iter(roots)), None)
                    except (StopIteration, RuntimeError):
                        break
                    self.dropped += 1

    def end_root(self, trace_id: int, span_id: int) -> None:
        """A span of a trace without state ended: forget the trace if it was its root."""
        roots = self.roots
        if roots.get(trace_id) == span_id:
            roots.pop(trace_id, None)

    def drop(self, trace_id: int) -> TraceState | None:
        return self._traces.pop(trace_id, None)

    def __len__(self) -> int:
        return len(self._traces) + len(self.roots)


# ------------------------------------------------------------------------------------------
# the current run, for code running inside agent_run


@dataclass(slots=True)
class RunHandle:
    """The run a piece of code belongs to (what :meth:`LoopGuard.agent_run` yields)."""

    run_id: str
    keyed_by: str
    agent: str | None
    span: Any = None
    outermost: bool = True
    state: RunEndState | None = None

    def set_state(self, state: RunEndState) -> None:
        """Override the end state (e.g. ``max_steps`` when the framework hit its own limit)."""
        self.state = state


_CURRENT_RUN: contextvars.ContextVar[RunHandle | None] = contextvars.ContextVar(
    "otel_loopguard_run", default=None
)


def current_run() -> RunHandle | None:
    return _CURRENT_RUN.get()


# ------------------------------------------------------------------------------------------
# the guard


class LoopGuard:
    """Monitor + telemetry + trace bookkeeping; the object wrappers and the processor share."""

    def __init__(
        self,
        config: LoopGuardConfig | None = None,
        *,
        monitor: Any = None,
        meter_provider: Any = None,
        tracer_provider: Any = None,
    ) -> None:
        from otel_loopguard.monitor import Monitor

        self.config = config if config is not None else LoopGuardConfig.from_env()
        self.monitor = monitor if monitor is not None else Monitor(self.config)
        self.telemetry = Telemetry(
            self.config, meter_provider, active_runs=lambda: self.monitor.active_runs
        )
        self.tracker = TraceTracker(max_traces=max(self.config.max_runs, 1_000))
        self.tracer_provider = tracer_provider
        self._tracer: trace.Tracer | None = None
        # span ids of spans the gate made and fed itself: the processor skips them
        self._managed: set[int] = set()
        # the subset that are gate tool spans (a tool span inside one is the same execution)
        self._managed_tools: set[int] = set()
        # open tool spans of other instrumentations nested (through tool spans only) inside
        # a gate tool span: the same execution, which the gate reports
        self._gate_nested: set[int] = set()
        # answers reported by a wrapper and by another instrumentation's span, counted once
        self.reported_answers = ReportedAnswers()
        self._fresh = threading.local()
        self.monitor.add_decision_listener(self._remember_fresh)
        if hasattr(self.monitor, "add_error_listener"):  # a user's own monitor may lack it
            self.monitor.add_error_listener(self.telemetry.count_internal_error)

    # -- settings ---------------------------------------------------------------------------

    @property
    def enforcing(self) -> bool:
        return self.config.enabled and self.config.mode == "enforce"

    def on_decision(self, callback: DecisionCallback) -> DecisionCallback:
        """Call ``callback(decision, event)`` for every non-continue decision, once.

        Use it to act on ``replan`` (inject ``decision.recommendation``) or ``pause``.
        Errors in the callback are caught and counted. Usable as a decorator.
        """
        self.monitor.add_decision_listener(callback)
        return callback

    # -- feeding ----------------------------------------------------------------------------

    def _remember_fresh(self, decision: Decision, _event: Event) -> None:
        self._fresh.decision = decision

    def observe(self, event: Event) -> tuple[Decision, bool]:
        """Feed one event; returns the decision and whether it was made just now.

        A stopped run answers every later event with its STOP decision; ``fresh`` tells
        a new decision from that repeat, so each decision is exported once.
        """
        fresh = self._fresh
        fresh.decision = None
        decision = self.monitor.observe(event)
        if decision.action is _CONTINUE:  # listeners only hear non-continue decisions
            return decision, False
        is_fresh = fresh.decision is decision
        fresh.decision = None
        return decision, is_fresh

    def preflight(self, run_id: str, kind: str, expected_tokens: int = 0) -> tuple[Decision, bool]:
        """Pre-flight limits and the stopped-run check; ``(decision, made just now)``."""
        fresh = self._fresh
        fresh.decision = None
        decision = self.monitor.preflight(
            run_id,
            kind,  # type: ignore[arg-type]
            expected_tokens=expected_tokens,
        )
        is_fresh = fresh.decision is decision and decision.action is not Action.CONTINUE
        fresh.decision = None
        return decision, is_fresh

    def tracer(self) -> trace.Tracer:
        """Our own tracer, for zero-duration ``loopguard.decision`` / ``loopguard.run`` spans."""
        if self._tracer is None:
            self._tracer = trace.get_tracer(
                SCOPE_NAME, tracer_provider=self.tracer_provider or trace.get_tracer_provider()
            )
        return self._tracer

    def is_managed(self, span_id: int) -> bool:
        return span_id in self._managed

    def is_gate_tool_span(self, span_id: int) -> bool:
        """A still-open tool span of :meth:`tool_call`."""
        return span_id in self._managed_tools

    def enter_gate_nested(
        self, span_id: int, parent_span_id: int, *, transport_of_parent: bool = False
    ) -> None:
        """Mark a starting tool span as part of its parent's execution (not fed) when the
        parent is a gate tool span or already marked (e.g. an MCP library's ``tools/call``
        span, and the SDK's ``MCP send`` in it), or when the caller found it to be the
        transport of its parent tool span (``transport_of_parent``)."""
        if (
            transport_of_parent
            or parent_span_id in self._managed_tools
            or parent_span_id in self._gate_nested
        ):
            nested = self._gate_nested
            if len(nested) >= _MAX_MANAGED:  # spans that never end: stay bounded
                nested.clear()
            nested.add(span_id)

    def leave_gate_nested(self, span_id: int) -> bool:
        """True (once) for a tool span marked by :meth:`enter_gate_nested`."""
        if span_id in self._gate_nested:
            self._gate_nested.discard(span_id)
            return True
        return False

    # -- run identity -------------------------------------------------------------------------

    def resolve_run(self, span: Span | None = None) -> RunIdentity:
        """The run the current code (or ``span``) belongs to; see DESIGN "Run identity"."""
        handle = _CURRENT_RUN.get()
        if handle is not None:
            return RunIdentity(handle.run_id, handle.keyed_by)  # type: ignore[arg-type]
        span = span if span is not None else trace.get_current_span()
        context = span.get_span_context()
        conversation = _baggage_conversation()
        if not context.is_valid:
            return run_identity("no-trace", conversation=conversation)
        trace_id = context.trace_id
        state = self.tracker.tracked(trace_id)
        if state is not None:
            identity = state.identity(conversation or state.conversation, state.root_agent())
            if identity.keyed_by == "trace":
                state.trace_run_used = True
            return identity
        return run_identity(format(trace_id, "032x"), conversation=conversation)

    # -- context managers -------------------------------------------------------------------

    def agent_run(
        self,
        tracer: trace.Tracer | None,
        agent_name: str | None,
        conversation_id: str | None = None,
        *,
        attributes: Mapping[str, Any] | None = None,
    ) -> _AgentRun:
        """An ``invoke_agent`` span and the run it stands for; ends with ``loopguard.run.state``."""
        return _AgentRun(self, tracer, agent_name, conversation_id, attributes)

    def tool_call(
        self,
        tracer: trace.Tracer | None,
        tool_name: str,
        arguments: Any = None,
        call_id: str | None = None,
        agent_name: str | None = None,
        *,
        attributes: Mapping[str, Any] | None = None,
    ) -> _ToolCall:
        """The gate around one tool execution; see the module docstring."""
        return _ToolCall(self, tracer, tool_name, arguments, call_id, agent_name, attributes)

    # -- model calls and checks -----------------------------------------------------------------

    def preflight_llm(self, *, expected_tokens: int = 0, span: Span | None = None) -> Decision:
        """Before a model call: budgets, max steps, timeout, stopped run. Raises at STOP
        in ``enforce`` mode."""
        try:
            if not self.config.enabled:
                return Decision(Action.CONTINUE)
            identity = self.resolve_run(span)
            decision, fresh = self.preflight(identity.run_id, "llm_call", expected_tokens)
            if fresh:
                target = span if span is not None else trace.get_current_span()
                self._export_to(target, decision, None)
        except Exception as exc:
            self.telemetry.internal_error("preflight_llm", exc)
            return Decision(Action.CONTINUE)
        if decision.action is Action.STOP:
            self._maybe_interrupt(decision)
        return decision

    def observe_llm_response(
        self,
        *,
        model: str | None = None,
        finish_reason: str | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        empty: bool = False,
        requested_tool_calls: Iterable[tuple[str, Any]] | None = None,
        agent_name: str | None = None,
        span: Span | None = None,
        raise_on_stop: bool = True,
        response_id: str | None = None,
    ) -> Decision:
        """Feed one model turn (usage, finish reason, emptiness, requested tool calls).

        ``span`` is the model-call span when the wrapper made one: the decision event is
        added to it (before it ends) and the processor will not feed it again. A
        :meth:`model_turn` open around this call learns that its turn was reported.
        ``response_id`` (the answer's ``gen_ai.response.id``) lets the turn count once when
        another instrumentation's span reports the same answer outside the turn (see
        :class:`~otel_loopguard.model_turn.ReportedAnswers`): the later of the two reports
        is dropped (then this returns ``continue``).
        """
        mark_reported()
        try:
            if not self.config.enabled:
                return Decision(Action.CONTINUE)
            from otel_loopguard.signatures import call_signature

            target = span if span is not None else trace.get_current_span()
            identity = self.resolve_run(target)
            if not self.reported_answers.first_report(
                identity.run_id, response_id, by_wrapper=True
            ):
                if span is not None:
                    self.mark_managed(span)  # nor may the processor read it as a turn
                return Decision(Action.CONTINUE)
            requested = None
            if requested_tool_calls is not None:
                max_chars = self.config.signature_max_chars
                requested = tuple(
                    sorted(
                        call_signature(name, args, max_chars=max_chars)[0]
                        for name, args in requested_tool_calls
                    )
                )
            context = target.get_span_context()
            handle = _CURRENT_RUN.get()
            event = Event(
                EventKind.LLM_RESPONSE,
                identity.run_id,
                actor=optional_text(agent_name) or (handle.agent if handle is not None else None),
                model=optional_text(model),
                finish_reason=optional_text(finish_reason),
                input_tokens=_token_count(input_tokens),
                output_tokens=_token_count(output_tokens),
                empty=bool(empty),
                requested_tool_calls=requested,
                trace_id=format(context.trace_id, "032x") if context.is_valid else None,
                span_id=format(context.span_id, "016x") if context.is_valid else None,
                timestamp=time.time(),
            )
            if span is not None and context.is_valid:
                self._add_managed(context.span_id)
        except Exception as exc:
            self.telemetry.internal_error("observe_llm_response", exc)
            return Decision(Action.CONTINUE)
        return self._observe_and_gate(event, target, "observe_llm_response", raise_on_stop)

    def observe_handoff(
        self,
        source_agent: str | None,
        target_agent: str,
        *,
        call_id: str | None = None,
        span: Span | None = None,
        raise_on_stop: bool = True,
    ) -> Decision:
        """Feed one handoff: ``source_agent`` (default: the current run's agent) hands the
        task to ``target_agent``.

        For wrappers whose handoff is a tool call their own gate spans (``transfer_to_*``,
        LlamaIndex's ``handoff`` tool): that span is managed, so the processor never maps it
        to a handoff. The decision event goes on ``span`` (default: the current span).
        """
        try:
            if not self.config.enabled:
                return Decision(Action.CONTINUE)
            target = span if span is not None else trace.get_current_span()
            identity = self.resolve_run(target)
            handle = _CURRENT_RUN.get()
            source = optional_text(source_agent) or (handle.agent if handle is not None else None)
            target_name = run_key(target_agent)
            event = Event(
                EventKind.HANDOFF,
                identity.run_id,
                actor=source,
                target_agent=target_name,
                signature=f"handoff:{source or '?'}->{target_name}",
                near_key=f"handoff:{source or '?'}->{target_name}",
                call_id=optional_text(call_id),
                **_origin(target.get_span_context()),
            )
        except Exception as exc:
            self.telemetry.internal_error("observe_handoff", exc)
            return Decision(Action.CONTINUE)
        return self._observe_and_gate(event, target, "observe_handoff", raise_on_stop)

    def _observe_and_gate(
        self, event: Event, span: Any, where: str, raise_on_stop: bool
    ) -> Decision:
        """Feed a wrapper's event, export a fresh decision on ``span``, raise at STOP."""
        try:
            decision, fresh = self.observe(event)
            if fresh:
                self._export_to(span, decision, event)
        except Exception as exc:
            self.telemetry.internal_error(where, exc)
            return Decision(Action.CONTINUE)
        if raise_on_stop and decision.action is Action.STOP:
            self._maybe_interrupt(decision)
        return decision

    def mark_managed(self, span: Span) -> None:
        """Tell the processor a span was fed by its wrapper already (it will skip it)."""
        context = span.get_span_context()
        if context.is_valid:
            self._add_managed(context.span_id)

    def unmark_managed(self, span: Span) -> None:
        """Forget a :meth:`mark_managed` span once it has ended (the mark is only needed
        until the processor has seen the span end); keeps the set small for long runs."""
        context = span.get_span_context()
        if context.is_valid:
            self._managed.discard(context.span_id)

    def _add_managed(self, span_id: int) -> None:
        managed = self._managed
        if len(managed) >= _MAX_MANAGED:  # no processor is removing them: stay bounded
            managed.clear()
            self._managed_tools.clear()
        managed.add(span_id)

    def model_turn(self) -> ModelTurn:
        """Open a :class:`~otel_loopguard.model_turn.ModelTurn` around one model call a
        framework wrapper sees at its own level (an agent step), to report the turn after
        the call only if no layer inside it (an SDK's instrumentation) did::

            guard.preflight_llm()
            with guard.model_turn() as turn:
                answer = call_model()
            if turn.needs_report:
                guard.observe_llm_response(...)

        Never raises; outside a run the turn has ``in_run`` False and needs no report.
        """
        try:
            in_run = self.config.enabled and _CURRENT_RUN.get() is not None
        except Exception as exc:  # pragma: no cover - a config object that fails to read
            self.telemetry.internal_error("model_turn", exc)
            in_run = False
        return open_turn(in_run)

    def current_run_steps(self) -> int | None:
        """Model turns the current run has seen so far (``None`` outside a run).

        To tell whether a layer below reported a turn, use :meth:`model_turn` instead: this
        counter also moves for a model call running in parallel in the same run.
        """
        try:
            handle = _CURRENT_RUN.get()
            if handle is None or not self.config.enabled:
                return None
            summary = self.monitor.run_snapshot(handle.run_id)
            return summary.counters.steps if summary is not None else 0
        except Exception as exc:
            self.telemetry.internal_error("current_run_steps", exc)
            return None

    def check_current_run(self) -> Decision:
        """Raise :class:`LoopGuardInterrupt` if the current run is stopped (enforce mode)."""
        try:
            if not self.config.enabled:
                return Decision(Action.CONTINUE)
            identity = self.resolve_run()
            snapshot = self.monitor.run_snapshot(identity.run_id)
        except Exception as exc:
            self.telemetry.internal_error("check_current_run", exc)
            return Decision(Action.CONTINUE)
        if snapshot is None or not snapshot.stopped:
            return Decision(Action.CONTINUE, run_id=identity.run_id)
        decision = snapshot.last_decision
        self._maybe_interrupt(decision)
        return decision

    # -- helpers -----------------------------------------------------------------------------

    def _maybe_interrupt(self, decision: Decision, span: Any = None) -> None:
        if self.enforcing and decision.action is Action.STOP:
            try:
                self.telemetry.record_interrupt(decision, _context_of(span))
            except Exception as exc:
                self.telemetry.internal_error("record_interrupt", exc)
            raise LoopGuardInterrupt(decision)

    def _export_to(self, span: Any, decision: Decision, event: Event | None) -> None:
        """Decision event on ``span`` if it is still open, else a zero-duration span."""
        try:
            context = _context_of(span)
            self.telemetry.record_decision(decision, event, context)
            if self.telemetry.add_decision_event(span, decision, event):
                return
            if span is not None and span.get_span_context().is_valid:
                self.telemetry.emit_decision_span(
                    self.tracer(), decision, event, span.get_span_context(), time.time_ns()
                )
        except Exception as exc:
            self.telemetry.internal_error("export_decision", exc)


def _context_of(span: Any) -> Any:
    if span is None:
        return None
    return trace.set_span_in_context(span)


def _baggage_conversation() -> str | None:
    for key in _BAGGAGE_CONVERSATION_KEYS:
        value = baggage.get_baggage(key)
        if isinstance(value, str) and value:
            return value
    return None


def _content_attribute(value: Any) -> str:
    """A JSON string for a span attribute; never raises (cyclic, non-JSON, huge values)."""
    try:
        text = value if isinstance(value, str) else json.dumps(value, default=repr)
    except Exception:  # not JSON, cyclic, too deep, or a repr/items() that raises
        try:
            text = repr(value)
        except Exception:
            text = f"<{type(value).__name__}>"
    if len(text) > _CONTENT_ATTRIBUTE_MAX_CHARS:
        text = text[: _CONTENT_ATTRIBUTE_MAX_CHARS - 1] + "…"
    return text


# ------------------------------------------------------------------------------------------
# context managers


class _AgentRun:
    """``with guard.agent_run(tracer, name) as run:`` (see :meth:`LoopGuard.agent_run`)."""

    __slots__ = (
        "_attributes",
        "_conversation",
        "_guard",
        "_name",
        "_span",
        "_token",
        "_tracer",
        "handle",
    )

    def __init__(
        self,
        guard: LoopGuard,
        tracer: trace.Tracer | None,
        agent_name: str | None,
        conversation_id: str | None,
        attributes: Mapping[str, Any] | None,
    ) -> None:
        self._guard = guard
        self._tracer = tracer
        self._name = agent_name
        self._conversation = conversation_id
        self._attributes = attributes
        self._span: Any = None
        self._token: Any = None
        self.handle: RunHandle | None = None

    def __enter__(self) -> RunHandle:
        guard = self._guard
        tracer = self._tracer or trace.get_tracer(SCOPE_NAME + ".agent")
        attrs: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent"}
        if self._name:
            attrs["gen_ai.agent.name"] = self._name
        if self._conversation:
            attrs["gen_ai.conversation.id"] = self._conversation
        if self._attributes:
            attrs.update(self._attributes)
        name = f"invoke_agent {self._name}" if self._name else "invoke_agent"
        span = tracer.start_span(name, kind=SpanKind.INTERNAL, attributes=attrs)
        self._span = span
        try:
            parent = _CURRENT_RUN.get()
            context = span.get_span_context()
            if context.is_valid:
                guard._add_managed(context.span_id)
            conversation = self._conversation or _baggage_conversation()
            if parent is not None and (not conversation or conversation == parent.run_id):
                # nested agents and handoffs stay in the one run
                handle = RunHandle(parent.run_id, parent.keyed_by, self._name, span, False)
            else:
                identity = run_identity(
                    format(context.trace_id, "032x"),
                    conversation=conversation,
                    root_span_id=format(context.span_id, "016x"),
                )
                handle = RunHandle(identity.run_id, identity.keyed_by, self._name, span, True)
                if guard.config.enabled:
                    guard.monitor.start_run(
                        handle.run_id, agent=self._name, keyed_by=identity.keyed_by
                    )
            span.set_attribute("loopguard.run.id", handle.run_id)
        except Exception as exc:
            guard.telemetry.internal_error("agent_run.enter", exc)
            handle = RunHandle(f"unknown-{id(self)}", "root", self._name, span, False)
        self.handle = handle
        self._token = (
            _CURRENT_RUN.set(handle),
            trace.use_span(span, end_on_exit=False),
            enter_run_scope(),
        )
        self._token[1].__enter__()
        return handle

    def suspend(self) -> None:
        """Detach the entered run from the current context without ending it.

        For runs that outlive one call frame (a stream the caller iterates, a handler the
        caller awaits later): between two steps the caller's context must not keep the run
        current, or a stream dropped halfway would make the caller's next run look nested.
        Call :meth:`resume` before the next step; ``__exit__`` ends a suspended run too.
        """
        token, self._token = self._token, None
        if token is None:
            return
        run_token, use_span, turn_scope = token
        try:
            use_span.__exit__(None, None, None)
        except Exception as error:  # pragma: no cover - context detach trouble
            self._guard.telemetry.internal_error("agent_run.detach", error)
        try:
            _CURRENT_RUN.reset(run_token)
        except ValueError:  # detached in another context (e.g. a generator closed elsewhere)
            _CURRENT_RUN.set(None)
        leave_run_scope(turn_scope)

    def resume(self) -> None:
        """Make a suspended run current again in this context (see :meth:`suspend`)."""
        if self._token is not None or self._span is None:
            return
        use_span = trace.use_span(self._span, end_on_exit=False)
        self._token = (_CURRENT_RUN.set(self.handle), use_span, enter_run_scope())
        use_span.__enter__()

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        guard = self._guard
        span = self._span
        handle = self.handle
        self.suspend()
        try:
            state = self._end_state(exc)
            if exc is not None and not isinstance(exc, LoopGuardInterrupt):
                if isinstance(exc, Exception):
                    span.record_exception(exc)
                span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
                span.set_attribute("error.type", type(exc).__qualname__)
            elif isinstance(exc, LoopGuardInterrupt):
                span.set_attribute("error.type", "LoopGuardInterrupt")
                span.set_status(Status(StatusCode.ERROR, str(exc)))
            span.set_attribute(RUN_STATE_ATTRIBUTE, state.value)
            if handle is not None and handle.outermost and guard.config.enabled:
                if handle.keyed_by != "conversation":
                    summary = guard.monitor.end_run(handle.run_id, state)
                else:
                    summary = guard.monitor.run_snapshot(handle.run_id)
                _set_usage(span, summary)
                guard.telemetry.record_run_end(state, trace.set_span_in_context(span))
        except Exception as error:
            guard.telemetry.internal_error("agent_run.exit", error)
        finally:
            span.end()
            guard._managed.discard(span.get_span_context().span_id)

    def _end_state(self, exc: BaseException | None) -> RunEndState:
        handle = self.handle
        if handle is not None and handle.state is not None:
            return handle.state
        if isinstance(exc, LoopGuardInterrupt):
            return exc.decision.end_state or RunEndState.STOPPED
        if exc is not None:
            import asyncio

            if isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt, GeneratorExit)):
                return RunEndState.CANCELLED
            if isinstance(exc, TimeoutError):
                return RunEndState.TIMED_OUT
            return RunEndState.ERROR
        if handle is not None and self._guard.config.enabled:
            snapshot = self._guard.monitor.run_snapshot(handle.run_id)
            if snapshot is not None and snapshot.stopped:
                stop = snapshot.first_stop.decision if snapshot.first_stop else None
                return (stop.end_state if stop else None) or RunEndState.STOPPED
        return RunEndState.COMPLETED


class _ToolCall:
    """``with guard.tool_call(tracer, name, args) as call:`` (see :meth:`LoopGuard.tool_call`)."""

    __slots__ = (
        "_agent",
        "_arguments",
        "_attributes",
        "_call_event",
        "_call_id",
        "_error",
        "_guard",
        "_has_result",
        "_identity",
        "_name",
        "_result",
        "_span",
        "_started",
        "_tracer",
        "_turn_scope",
        "_use_span",
        "decision",
    )

    def __init__(
        self,
        guard: LoopGuard,
        tracer: trace.Tracer | None,
        tool_name: str,
        arguments: Any,
        call_id: str | None,
        agent_name: str | None,
        attributes: Mapping[str, Any] | None,
    ) -> None:
        self._guard = guard
        self._tracer = tracer
        self._name = tool_name
        self._arguments = arguments
        self._call_id = call_id
        self._agent = agent_name
        self._attributes = attributes
        self._span: Any = None
        self._use_span: Any = None
        self._turn_scope: Any = None
        self._identity: RunIdentity | None = None
        self._call_event: Event | None = None
        self._result: Any = None
        self._has_result = False
        self._error: ErrorInfo | None = None
        self._started = 0.0
        self.decision: Decision = Decision(Action.CONTINUE)

    # what the wrapped code sees
    def set_result(self, result: Any) -> None:
        """Record the tool's output (otherwise the result is unknown, or the exception)."""
        self._result = result
        self._has_result = True

    def set_error(
        self, error_type: str, message: str | None = None, status_code: int | None = None
    ) -> None:
        """Record a failure that the framework returns as a value instead of raising it
        (an MCP result with ``is_error``, an SDK's error text handed to the model): the span
        gets ``error.type`` and an error status, the monitor a ``tool_error`` event.

        Also when an exception passes: a framework that wraps the tool's own error in its
        own (smolagents' ``AgentToolExecutionError`` "... Please try again") hides what the
        failure detectors classify; the recorded error wins over the passing exception."""
        self._error = ErrorInfo(type=error_type, message=message, status_code=status_code)

    @property
    def span(self) -> Any:
        return self._span

    @property
    def run_id(self) -> str | None:
        return self._identity.run_id if self._identity is not None else None

    def __enter__(self) -> _ToolCall:
        guard = self._guard
        self._started = time.perf_counter()
        tracer = self._tracer or trace.get_tracer(SCOPE_NAME + ".tool")
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": self._name,
        }
        if self._call_id:
            attrs["gen_ai.tool.call.id"] = self._call_id
        if self._attributes:
            attrs.update(self._attributes)
        config = guard.config
        if config.capture_content and self._arguments is not None:
            attrs["gen_ai.tool.call.arguments"] = _content_attribute(self._arguments)
        span = tracer.start_span(
            f"execute_tool {self._name}", kind=SpanKind.INTERNAL, attributes=attrs
        )
        self._span = span
        self._use_span = trace.use_span(span, end_on_exit=False)
        self._use_span.__enter__()
        # a tool is no part of a model turn still open around it (a streamed answer whose
        # tools run while it is read): a model call inside the tool is its own turn
        self._turn_scope = enter_run_scope()
        if not config.enabled:
            return self
        veto: Decision | None = None
        try:
            context = span.get_span_context()
            if context.is_valid:
                guard._add_managed(context.span_id)
                guard._managed_tools.add(context.span_id)
            identity = guard.resolve_run(span)
            self._identity = identity
            handle = _CURRENT_RUN.get()
            agent = self._agent or (handle.agent if handle is not None else None)
            if agent is None:
                state = guard.tracker.get(context.trace_id)
                inner = state.innermost_agent() if state is not None else None
                agent = inner.name if inner is not None else None
            self._agent = agent
            if agent and "gen_ai.agent.name" not in attrs:
                span.set_attribute("gen_ai.agent.name", agent)  # who called it, for replay
            preflight, fresh = guard.preflight(identity.run_id, "tool_call")
            if fresh:
                guard._export_to(span, preflight, None)
            if preflight.action is Action.STOP:
                self.decision = preflight
                if guard.enforcing:
                    veto = preflight
            if veto is None:
                # observed before the tool runs: the Nth identical call is stopped unexecuted
                event = tool_call(
                    identity.run_id,
                    self._name,
                    self._arguments,
                    actor=agent,
                    call_id=self._call_id,
                    max_chars=config.signature_max_chars,
                    **_origin(context),
                )
                self._call_event = event
                if config.export_signatures:
                    span.set_attribute(CALL_SIGNATURE_ATTRIBUTE, event.signature)
                    span.set_attribute(CALL_NEAR_KEY_ATTRIBUTE, event.near_key)
                decision, fresh = guard.observe(event)
                if decision.action >= self.decision.action:
                    self.decision = decision
                if fresh:
                    guard._export_to(span, decision, event)
                if decision.action is Action.STOP and guard.enforcing:
                    veto = decision
        except Exception as exc:
            guard.telemetry.internal_error("tool_call.enter", exc)
            return self
        if veto is not None:
            self._veto(veto)
        return self

    def _veto(self, decision: Decision) -> None:
        """The pre-call veto: the tool never runs; the span ends as an interrupted call."""
        guard = self._guard
        span = self._span
        try:
            span.set_attribute("error.type", "LoopGuardInterrupt")
            span.set_status(Status(StatusCode.ERROR, "vetoed by otel-loopguard"))
            guard.telemetry.record_interrupt(decision, trace.set_span_in_context(span))
        except Exception as exc:
            guard.telemetry.internal_error("tool_call.veto", exc)
        finally:
            self._finish()
        raise LoopGuardInterrupt(decision)

    def _finish(self) -> None:
        try:
            self._use_span.__exit__(None, None, None)
        except Exception as exc:  # pragma: no cover
            self._guard.telemetry.internal_error("tool_call.detach", exc)
        leave_run_scope(self._turn_scope)
        self._span.end()
        span_id = self._span.get_span_context().span_id
        self._guard._managed.discard(span_id)
        self._guard._managed_tools.discard(span_id)
        try:
            self._guard.telemetry.record_processing(
                time.perf_counter() - self._started, "tool_gate"
            )
        except Exception as exc:  # pragma: no cover
            self._guard.telemetry.internal_error("tool_call.metrics", exc)

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        guard = self._guard
        span = self._span
        config = guard.config
        decision = self.decision
        try:
            interrupted = isinstance(exc, (LoopGuardInterrupt, GeneratorExit))
            if exc is not None and isinstance(exc, Exception):
                span.record_exception(exc)
            if self._error is not None and not interrupted:
                span.set_status(Status(StatusCode.ERROR, self._error.message))
                span.set_attribute("error.type", self._error.type or "tool_error")
            elif exc is not None:
                span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
                span.set_attribute("error.type", type(exc).__qualname__)
            elif config.capture_content and self._has_result:
                span.set_attribute("gen_ai.tool.call.result", _content_attribute(self._result))
            if (
                config.enabled
                and self._identity is not None
                and self._call_event is not None
                and not isinstance(exc, (LoopGuardInterrupt, GeneratorExit))
            ):
                decision = self._observe_outcome(exc)
        except Exception as error:
            guard.telemetry.internal_error("tool_call.exit", error)
        finally:
            self._finish()
        if (
            guard.enforcing
            and decision.action is Action.STOP
            and not isinstance(exc, LoopGuardInterrupt)
        ):
            try:
                guard.telemetry.record_interrupt(decision, trace.set_span_in_context(span))
            except Exception as error:  # pragma: no cover
                guard.telemetry.internal_error("tool_call.interrupt", error)
            raise LoopGuardInterrupt(decision) from exc

    def _observe_outcome(self, exc: BaseException | None) -> Decision:
        guard = self._guard
        identity = self._identity
        assert identity is not None
        context = self._span.get_span_context()
        max_chars = guard.config.signature_max_chars
        origin = _origin(context)
        if self._error is not None:
            event = tool_error(
                identity.run_id,
                self._name,
                self._error,
                actor=self._agent,
                call_id=self._call_id,
                max_chars=max_chars,
                **origin,
            )
        elif exc is not None:
            message = None
            try:
                message = str(exc)
            except Exception:  # a hostile __str__
                message = None
            event = tool_error(
                identity.run_id,
                self._name,
                ErrorInfo(
                    type=type(exc).__qualname__,
                    message=message,
                    status_code=_status_code(exc),
                ),
                actor=self._agent,
                call_id=self._call_id,
                max_chars=max_chars,
                **origin,
            )
        else:
            event = tool_result(
                identity.run_id,
                self._name,
                self._result if self._has_result else None,
                actor=self._agent,
                call_id=self._call_id,
                max_chars=max_chars,
                **origin,
            )
        if exc is None and guard.config.export_signatures:
            self._span.set_attribute(RESULT_SIGNATURE_ATTRIBUTE, event.signature)
            self._span.set_attribute(RESULT_NEAR_KEY_ATTRIBUTE, event.near_key)
        events = [event]
        target = handoff_target(self._name) if exc is None else None
        if target is not None:  # a transfer_to_<agent> tool that returned: the handoff happened
            events.append(
                handoff_event(identity.run_id, self._agent, target, self._call_id, **origin)
            )
        for observed in events:
            decision, fresh = guard.observe(observed)
            if fresh:
                guard._export_to(self._span, decision, observed)
            if decision.action >= self.decision.action:
                self.decision = decision
        return self.decision


def _set_usage(span: Any, summary: Any) -> None:
    """The run's token totals on its agent span (GenAI ``gen_ai.usage.*``), when known."""
    counters = getattr(summary, "counters", None)
    if counters is None or not (counters.input_tokens or counters.output_tokens):
        return
    span.set_attribute("gen_ai.usage.input_tokens", counters.input_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", counters.output_tokens)


def _origin(context: trace.SpanContext) -> dict[str, Any]:
    if not context.is_valid:
        return {"timestamp": time.time()}
    return {
        "trace_id": format(context.trace_id, "032x"),
        "span_id": format(context.span_id, "016x"),
        "timestamp": time.time(),
    }


def _status_code(exc: BaseException) -> int | None:
    for name in ("status_code", "status", "code"):
        value = getattr(exc, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
            return value
    response = getattr(exc, "response", None)
    value = getattr(response, "status_code", None)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


# ------------------------------------------------------------------------------------------
# the process-wide guard

_GUARD: LoopGuard | None = None
_GUARD_LOCK = threading.Lock()


def get_guard() -> LoopGuard:
    """The process-wide guard, created on first use from ``OTEL_LOOPGUARD_*`` variables."""
    global _GUARD
    guard = _GUARD
    if guard is None:
        with _GUARD_LOCK:
            if _GUARD is None:
                _GUARD = LoopGuard()
            guard = _GUARD
    return guard


def set_guard(guard: LoopGuard | None) -> LoopGuard | None:
    """Replace the process-wide guard (tests, or an application with its own settings).

    Returns the previous one. ``None`` makes the next :func:`get_guard` build a new one.
    """
    global _GUARD
    with _GUARD_LOCK:
        previous, _GUARD = _GUARD, guard
    return previous


def _token_count(value: Any) -> int | None:
    """A token count as a framework reports it (an int, a float, a numeric string) as an
    ``int``; ``None`` when it is none of those. The event's field is an ``int``, which a
    compiled build enforces."""
    if value is None or value.__class__ is int:
        return value  # type: ignore[no-any-return]
    try:
        count = int(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return None if isinstance(value, bool) else count
