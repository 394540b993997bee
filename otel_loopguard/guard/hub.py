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
  raises :class:`~otel_loopguard.engine.decisions.LoopGuardInterrupt` at STOP in ``enforce`` mode.

``LoopGuardInterrupt`` derives from ``BaseException`` because frameworks catch
``Exception`` around tools and hand it back to the model, which would let the loop go on.
In ``observe`` mode nothing is ever raised. Internal errors never reach the caller: they
are counted in ``loopguard.internal_errors`` and logged once.

Both context managers are synchronous and never await, so they work in ``async`` code
too; the current run travels in a :class:`contextvars.ContextVar` (copied into asyncio
tasks) and, for spans made by other instrumentations, through the span context.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Action, Decision, LoopGuardInterrupt, RunEndState
from otel_loopguard.engine.events import (
    Event,
    EventKind,
    optional_text,
    run_key,
)
from otel_loopguard.engine.interrupt import readable, stop_summary
from otel_loopguard.engine.run_identity import RunIdentity, as_run_key, end_state, run_identity
from otel_loopguard.guard.agent_run import AgentRun
from otel_loopguard.guard.deliveries import Deliveries
from otel_loopguard.guard.managed import ManagedSpans
from otel_loopguard.guard.model_turns import (
    ModelTurn,
    ReportedAnswers,
    mark_reported,
    open_turn,
    open_turn_needs_report,
    open_turn_started,
)
from otel_loopguard.guard.run_context import _CURRENT_RUN, RunHandle, current_run
from otel_loopguard.guard.shared_runs import SharedRuns, shared_runs_for
from otel_loopguard.guard.span_context import (
    baggage_conversation,
    context_of,
    origin,
    token_count,
)
from otel_loopguard.guard.standalone_runs import StandaloneRuns
from otel_loopguard.guard.tool_call import ToolCall
from otel_loopguard.spans.dialects import (
    INPUT_TOKEN_KEYS,
    LEGACY_INPUT_TOKEN_KEYS,
    LEGACY_OUTPUT_TOKEN_KEYS,
    OUTPUT_TOKEN_KEYS,
)
from otel_loopguard.spans.executions import GATE
from otel_loopguard.spans.follower import OpenAgent, SpanFollower, TraceState
from otel_loopguard.spans.sdk import PLAIN_CLASSES, status_and_end
from otel_loopguard.spans.view import SpanView, detection_view
from otel_loopguard.telemetry import SCOPE_NAME, Telemetry

logger = logging.getLogger("otel_loopguard")

DecisionCallback = Callable[[Decision, Event], None]

_MAX_MANAGED = 100_000
_CONTINUE = Action.CONTINUE
#: the attributes that say a model span records its usage, in any dialect
_USAGE_KEYS = frozenset(
    INPUT_TOKEN_KEYS + OUTPUT_TOKEN_KEYS + LEGACY_INPUT_TOKEN_KEYS + LEGACY_OUTPUT_TOKEN_KEYS
)


def _config_from_env() -> LoopGuardConfig:
    """The settings of the ``OTEL_LOOPGUARD_*`` variables; ``loopguard`` (or ``*``) in
    ``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS`` turns every part off, as
    ``OTEL_LOOPGUARD_ENABLED=false`` does: the processor, the gates and the framework
    packages, which share this guard (``loopguard_<framework>`` there turns off only that
    package, by not loading it)."""
    config = LoopGuardConfig.from_env()
    disabled = os.environ.get(DISABLED_INSTRUMENTATIONS, "")
    if config.enabled and {"loopguard", "*"} & {name.strip() for name in disabled.split(",")}:
        logger.info("otel-loopguard: off (%s=%s)", DISABLED_INSTRUMENTATIONS, disabled)
        config = config.model_copy(update={"enabled": False})
    return config


#: the variable opentelemetry-instrument reads to skip instrumentors by entry-point name
DISABLED_INSTRUMENTATIONS = "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS"


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
        from otel_loopguard.engine.monitor import Monitor

        self.config = config if config is not None else _config_from_env()
        self.monitor = monitor if monitor is not None else Monitor(self.config)
        self.telemetry = Telemetry(
            self.config, meter_provider, active_runs=lambda: self.monitor.active_runs
        )
        #: spans our wrappers made and fed themselves (the processor skips them)
        self.managed = ManagedSpans()
        #: the one span follower (span starts/ends -> runs, events, run ends), shared with
        #: the processor: the gate asks it which run the current trace belongs to
        self.follower = SpanFollower(
            self.config,
            make_view=_detection_view,
            trace_hex=_trace_hex,
            span_hex=_span_hex,
            gate=self.managed,
            model_span_ended=self._model_span_ended,
            max_traces=max(self.config.max_runs, 1_000),
        )
        self.tracer_provider = tracer_provider
        self._tracer: trace.Tracer | None = None
        #: runs of calls outside any run and any parent span, per thread or task
        self.standalone = StandaloneRuns(self.config.standalone_idle_gap)
        # answers reported by a wrapper and by another instrumentation's span, counted once
        self.reported_answers = ReportedAnswers()
        # keys of the model turns a wrapper reported (spans.executions)
        self._reported_turns = itertools.count()
        # runs a gate acted in, and runs a gate interrupted: in enforce mode a STOP that no
        # gate could enforce is said once and recorded as such (bounded, oldest dropped)
        self._gated: OrderedDict[str, None] = OrderedDict()
        self._interrupted: OrderedDict[str, None] = OrderedDict()
        self._warned_unenforced = False
        self._warned_unrecorded = False
        observe_fresh = getattr(self.monitor, "observe_fresh", None)
        preflight_fresh = getattr(self.monitor, "preflight_fresh", None)
        #: the monitor's decision and whether it is new (a user's own monitor without
        #: ``observe_fresh``: every non-continue decision counts as new)
        self.observe = observe_fresh if observe_fresh is not None else self._observe_any
        self._preflight_fresh = preflight_fresh
        if hasattr(self.monitor, "add_error_listener"):  # a user's own monitor may lack it
            self.monitor.add_error_listener(self.telemetry.count_internal_error)
        #: the run store's side (OTEL_LOOPGUARD_STORE, fleet budgets); None by default
        self.shared_runs: SharedRuns | None = shared_runs_for(self, meter_provider)
        #: replans' recommendations waiting for their run's next model request
        self.deliveries = Deliveries(self)
        self.telemetry.delivery_status = self.deliveries.status
        if hasattr(self.monitor, "add_decision_listener"):
            self.monitor.add_decision_listener(self.deliveries.decided)
            self.monitor.add_decision_listener(self._stop_unrecorded)

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

    def monitor_note_delivered(self, run_id: str, detector: str) -> None:
        """A recommendation of ``detector`` reached the run's model: the policy's ladder
        counts it (a user's own monitor without ``note_delivered`` has no ladder)."""
        note = getattr(self.monitor, "note_delivered", None)
        if note is not None:
            note(run_id, detector)

    # -- feeding ----------------------------------------------------------------------------

    def _observe_any(self, event: Event) -> tuple[Decision, bool]:
        decision = self.monitor.observe(event)
        return decision, decision.action is not _CONTINUE

    def preflight(
        self, run_id: str, kind: str, expected_tokens: int = 0, begun: Any = None
    ) -> tuple[Decision, bool]:
        """Pre-flight limits and the stopped-run check; ``(decision, made just now)``.
        ``begun``: what :meth:`preflight_before_span` returned for this call."""
        if self.shared_runs is not None:  # a run shared through the store
            return self.shared_runs.preflight(run_id, kind, expected_tokens, begun)
        preflight_fresh: Any = self._preflight_fresh
        if preflight_fresh is not None:
            return preflight_fresh(run_id, kind, expected_tokens=expected_tokens)  # type: ignore[no-any-return]
        monitor: Any = self.monitor
        decision = monitor.preflight(run_id, kind, expected_tokens=expected_tokens)
        return decision, decision.action is not _CONTINUE

    def _model_span_ended(self, run_id: str, attributes: Mapping[str, Any]) -> bool:
        """A model span of another instrumentation ended (in the thread and context that
        ended it): it reports the turn of a framework wrapper's open model turn; and it is a
        duplicate when a wrapper reported this very answer already (LiteLLM's own
        OpenTelemetry callback makes its span later, in a worker thread or task).

        A model span without usage never silences the count of one that has it: inside a
        wrapper's open turn (OpenLLMetry's ``openai.response`` span of the Agents SDK's Chat
        Completions model, or of any model with sensitive data off, has no tokens) it leaves
        the turn to the wrapper, which reports it with its usage, and is not fed (the same
        step twice)."""
        if _USAGE_KEYS.isdisjoint(attributes.keys()) and open_turn_needs_report():
            return True
        mark_reported()
        return not self.reported_answers.first_report(
            run_id, attributes.get("gen_ai.response.id"), by_wrapper=False
        )

    def _reported_below(self, context: Any, started: int, now: int) -> bool:
        """Another instrumentation's model span of this very call (it overlaps the call in
        this trace) was fed already: OpenInference's OpenAI span ends inside our OpenAI
        package's call. The turn counted then; this report is the same one again."""
        if not context.is_valid:
            return False
        state = self.follower.get(context.trace_id)
        return state is not None and state.executions.claim("llm", None, None, started, now, GATE)

    def tracer(self) -> trace.Tracer:
        """Our own tracer, for zero-duration ``loopguard.decision`` / ``loopguard.run`` spans."""
        if self._tracer is None:
            self._tracer = trace.get_tracer(
                SCOPE_NAME, tracer_provider=self.tracer_provider or trace.get_tracer_provider()
            )
        return self._tracer

    # -- run identity -------------------------------------------------------------------------

    def resolve_run(self, span: Span | None = None) -> RunIdentity:
        """The run the current code (or ``span``) belongs to; see DESIGN "Run identity".

        Calls outside any run and any parent span (a gate with no ``agent_run`` around it,
        with or without an SDK) belong to the thread's or task's standalone run
        (:mod:`otel_loopguard.guard.standalone_runs`), and so does what runs inside them."""
        handle = _CURRENT_RUN.get()
        if handle is not None:
            return RunIdentity(handle.run_id, as_run_key(handle.keyed_by))
        explicit = span is not None
        span = span if span is not None else trace.get_current_span()
        context = span.get_span_context()
        conversation = baggage_conversation()
        if not context.is_valid:
            if conversation:
                return run_identity("no-trace", conversation=conversation)
            return self.standalone.identity()
        standalone = self.standalone.in_trace(context.trace_id)
        if standalone is not None:
            return standalone
        if explicit and not conversation and _local_root_outside_runs(self.follower, span):
            identity = self.standalone.identity()
            self.standalone.begin_trace(context.trace_id, identity)
            return identity
        return self.follower.identity_in_trace(context.trace_id, conversation)

    def preflight_before_span(self, kind: str) -> Any:
        """With a shared run store: the pre-flight of the run a span about to start here
        belongs to, begun (its request sent), so that making the span overlaps the round
        trip; hand it to :meth:`preflight` as ``begun``. ``None`` without a shared store,
        when disabled, or when the run is not known before the span (it will be a trace's
        root)."""
        shared = self.shared_runs
        try:
            if shared is None or not self.config.enabled:
                return None
            current = trace.get_current_span().get_span_context()
            if _CURRENT_RUN.get() is None and not current.is_valid:
                return None
            return shared.preflight_begin(self.resolve_run().run_id, kind)
        except Exception as exc:
            self.telemetry.internal_error("preflight_before_span", exc)
            return None

    # -- context managers -------------------------------------------------------------------

    def agent_run(
        self,
        tracer: trace.Tracer | None,
        agent_name: str | None,
        conversation_id: str | None = None,
        *,
        attributes: Mapping[str, Any] | None = None,
    ) -> AgentRun:
        """An ``invoke_agent`` span and the run it stands for; ends with ``loopguard.run.state``."""
        return AgentRun(self, tracer, agent_name, conversation_id, attributes)

    def tool_call(
        self,
        tracer: trace.Tracer | None,
        tool_name: str,
        arguments: Any = None,
        call_id: str | None = None,
        agent_name: str | None = None,
        *,
        attributes: Mapping[str, Any] | None = None,
    ) -> ToolCall:
        """The gate around one tool execution; see the module docstring."""
        return ToolCall(self, tracer, tool_name, arguments, call_id, agent_name, attributes)

    # -- model calls and checks -----------------------------------------------------------------

    def preflight_llm(self, *, expected_tokens: int = 0, span: Span | None = None) -> Decision:
        """Before a model call: budgets, max steps, timeout, stopped run. Raises at STOP
        in ``enforce`` mode."""
        try:
            if not self.config.enabled:
                return Decision(Action.CONTINUE)
            identity = self.resolve_run(span)
            self.note_gate(identity.run_id)
            decision, fresh = self.preflight(identity.run_id, "llm_call", expected_tokens)
            if fresh:
                target = span if span is not None else trace.get_current_span()
                self._export_to(target, decision, None)
        except Exception as exc:
            self.telemetry.internal_error("preflight_llm", exc)
            return Decision(Action.CONTINUE)
        if decision.action is Action.STOP:
            self._maybe_interrupt(
                decision, saved="this model call and every later call of this run (not sent)"
            )
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
        text: str | None = None,
    ) -> Decision:
        """Feed one model turn (usage, finish reason, emptiness, requested tool calls).

        ``text``: the answer's own words, when the wrapper has them; only their hashes go
        into the event (:func:`~otel_loopguard.engine.signatures.text_signature`), for the
        repeated-text detector.

        ``span`` is the model-call span when the wrapper made one: the decision event is
        added to it (before it ends) and the processor will not feed it again. A
        :meth:`model_turn` open around this call learns that its turn was reported.
        ``response_id`` (the answer's ``gen_ai.response.id``) lets the turn count once when
        another instrumentation's span reports the same answer outside the turn (see
        :class:`~otel_loopguard.guard.model_turns.ReportedAnswers`): the later of the two reports
        is dropped (then this returns ``continue``).
        """
        mark_reported()
        try:
            if not self.config.enabled:
                return Decision(Action.CONTINUE)
            from otel_loopguard.engine.signatures import call_signature

            target = span if span is not None else trace.get_current_span()
            identity = self.resolve_run(target)
            context = target.get_span_context()
            now = time.time_ns()
            started = (getattr(span, "start_time", None) if span is not None else None) or (
                open_turn_started() or now
            )
            paired = not self.reported_answers.first_report(
                identity.run_id, response_id, by_wrapper=True
            )
            below = not paired and self._reported_below(context, started, now)
            if paired or below:
                if span is not None:
                    self.managed.add_span(span)  # nor may the processor read it as a turn
                if below and raise_on_stop:
                    # what their span's turn decided is enforced here, before the tools run
                    return self.check_current_run()
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
            handle = _CURRENT_RUN.get()
            event = Event(
                EventKind.LLM_RESPONSE,
                identity.run_id,
                actor=optional_text(agent_name) or (handle.agent if handle is not None else None),
                model=optional_text(model),
                finish_reason=optional_text(finish_reason),
                input_tokens=token_count(input_tokens),
                output_tokens=token_count(output_tokens),
                empty=bool(empty),
                requested_tool_calls=requested,
                trace_id=format(context.trace_id, "032x") if context.is_valid else None,
                span_id=format(context.span_id, "016x") if context.is_valid else None,
                timestamp=time.time(),
            )
            if isinstance(text, str) and text.strip():
                from otel_loopguard.engine.signatures import text_signature, text_sketch

                signed = text_signature(text, self.config.signature_max_chars)
                event.signature, event.near_key = signed
                event.details["text_sketch"] = text_sketch(text)
            if span is not None and context.is_valid:
                self.managed.add(context.span_id)
            if context.is_valid:
                # another instrumentation's span of this model call (OpenInference's
                # LangChain span ends after the wrapper reported) is not fed again
                self.follower.execution_started(
                    context.trace_id,
                    ("llm", next(self._reported_turns)),
                    "llm",
                    None,
                    None,
                    started,
                    now,
                )
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
                **origin(target.get_span_context()),
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
            self._maybe_interrupt(decision, saved=_SAVED_AT.get(where, ""))
        return decision

    def is_managed(self, span_id: int) -> bool:
        """Whether the span (by its SDK span id) is one a wrapper fed itself."""
        return self.managed.is_managed(span_id)

    def mark_managed(self, span: Span) -> None:
        """Tell the processor a span was fed by its wrapper already (it will skip it)."""
        self.managed.add_span(span)

    def unmark_managed(self, span: Span) -> None:
        """Forget a :meth:`mark_managed` span once it has ended (the mark is only needed
        until the processor has seen the span end); keeps the registry small."""
        self.managed.discard_span(span)

    def model_turn(self) -> ModelTurn:
        """Open a :class:`~otel_loopguard.guard.model_turns.ModelTurn` around one model call a
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
            if self.shared_runs is not None:  # a STOP another process made counts too
                self.shared_runs.check(identity.run_id)
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

    def _maybe_interrupt(self, decision: Decision, span: Any = None, saved: str = "") -> None:
        if self.enforcing and decision.action is Action.STOP:
            self.note_interrupt(decision, context_of(span), saved=saved)
            raise LoopGuardInterrupt(decision)

    # -- enforcement bookkeeping ---------------------------------------------------------------

    def note_gate(self, run_id: str | None) -> None:
        """A gate (tool call, agent run, model-call check) acted in this run: it can be
        interrupted there."""
        if run_id is not None and run_id not in self._gated:
            _remember(self._gated, run_id)

    def note_interrupt(
        self,
        decision: Decision,
        context: Any = None,
        *,
        tool: str | None = None,
        agent: str | None = None,
        saved: str = "",
    ) -> None:
        """A gate is raising :class:`LoopGuardInterrupt` for ``decision``: count it in
        ``loopguard.interrupts``, remember that the run's STOP was enforced, and, the first
        time a run is interrupted, say so in one WARNING line of the ``otel_loopguard``
        logger (run, agent, tool, detectors, reason, what the interrupt saved: ``saved``
        says what did not run here)."""
        try:
            self.telemetry.record_interrupt(decision, context)
        except Exception as exc:
            self.telemetry.internal_error("record_interrupt", exc)
        run_id = decision.run_id
        if run_id is None or run_id not in self._interrupted:
            try:
                self._say_interrupted(decision, tool, agent, saved)
            except Exception as exc:
                self.telemetry.internal_error("interrupt_log", exc)
        if run_id is not None:
            _remember(self._interrupted, run_id)

    def _say_interrupted(
        self, decision: Decision, tool: str | None, agent: str | None, saved: str
    ) -> None:
        """The one line a user sees when an interrupt ends their agent's run."""
        handle = _CURRENT_RUN.get()
        if agent is None and handle is not None:
            agent = handle.agent
        if tool is None:
            tool = next(
                (
                    str(signal.evidence["tool"])
                    for signal in decision.reasons
                    if isinstance(signal.evidence, dict) and signal.evidence.get("tool")
                ),
                None,
            )
        counts = self.monitor.run_counts(decision.run_id) if decision.run_id else None
        steps, tool_calls, input_tokens, output_tokens, _cost = counts or (0, 0, 0, 0, None)
        logger.warning(
            "otel-loopguard: STOP interrupted %s; saved: %s",
            stop_summary(
                decision,
                agent=agent,
                tool=tool,
                tool_calls=tool_calls,
                model_turns=steps,
                tokens=input_tokens + output_tokens,
            ),
            saved or "every later tool and model call of this run (vetoed before it runs)",
        )

    def stop_unenforceable(self, decision: Decision) -> None:
        """The processor decided STOP from spans: in enforce mode, say once when no gate can
        act on that run (nothing will interrupt it), and what to add."""
        run_id = decision.run_id
        if not self.enforcing or self._warned_unenforced or run_id in self._gated:
            return
        self._warned_unenforced = True
        logger.warning(
            "otel-loopguard: enforce mode decided STOP for run %s (%s), but nothing can "
            "interrupt it: no otel-loopguard gate wraps this agent's tool calls (its spans "
            "come from plain OpenTelemetry or another instrumentation). Install the "
            "otel-loopguard package for its framework, or wrap its tools with "
            "@loopguard_tool / tool_span. Such runs end as 'stop_not_enforced'. "
            "(said once per process)",
            run_id,
            decision.reasons[0].message if decision.reasons else "stop",
        )

    def _stop_unrecorded(self, decision: Decision, event: Event | None = None) -> None:
        """Observe mode decided STOP where no OpenTelemetry SDK records anything (the span
        it was decided on does not record, and no SDK tracer provider is set): the decision
        would vanish, and the agent runs on. Say so once per process, with what to add."""
        if (
            decision.action is not Action.STOP
            or self._warned_unrecorded
            or self.enforcing
            or not self.config.enabled
            or trace.get_current_span().is_recording()
        ):
            return
        provider = self.tracer_provider or trace.get_tracer_provider()
        if getattr(provider, "add_span_processor", None) is not None:
            return
        self._warned_unrecorded = True
        logger.warning(
            "otel-loopguard: observe mode decided STOP for run %s (%s), and nothing records "
            "it: no OpenTelemetry SDK tracer provider is set. OTEL_LOOPGUARD_MODE=enforce "
            "interrupts such runs; an SDK provider (opentelemetry-instrument with "
            "opentelemetry-distro, or trace.set_tracer_provider(...)) records the decisions. "
            "(said once per process)",
            decision.run_id or "-",
            readable(decision.reason or "stop"),
        )

    def as_exported(self, decision: Decision) -> Decision:
        """A STOP decided from spans as its event says it: in enforce mode, when no gate
        acted in its run (so nothing will interrupt it), its ``loopguard.run.state`` is
        ``stop_not_enforced``, the state the run ends in (:meth:`run_end_state`)."""
        if (
            decision.end_state is None
            or not self.enforcing
            or decision.run_id is None
            or decision.run_id in self._gated
        ):
            return decision
        return Decision(
            decision.action,
            decision.risk,
            decision.reasons,
            decision.recommendation,
            decision.run_id,
            RunEndState.STOP_NOT_ENFORCED,
        )

    def run_end_state(
        self,
        summary: Any = None,
        *,
        error: bool = False,
        exception: BaseException | None = None,
        override: RunEndState | None = None,
    ) -> RunEndState:
        """:func:`~otel_loopguard.engine.run_identity.end_state`, told the truth about
        enforcement: in enforce mode a run that reached STOP without a gate interrupting it
        ends ``stop_not_enforced``, not ``stopped``."""
        state = end_state(summary, error=error, exception=exception, override=override)
        if (
            override is None
            and exception is None
            and summary is not None
            and summary.stopped
            and self.enforcing
            and summary.run_id not in self._interrupted
        ):
            return RunEndState.STOP_NOT_ENFORCED
        return state

    def _export_to(self, span: Any, decision: Decision, event: Event | None) -> None:
        """Decision event on ``span`` if it is still open, else a zero-duration span."""
        try:
            context = context_of(span)
            self.telemetry.record_decision(decision, event, context)
            if self.telemetry.add_decision_event(span, decision, event):
                return
            if span is not None and span.get_span_context().is_valid:
                self.telemetry.emit_decision_span(
                    self.tracer(), decision, event, span.get_span_context(), time.time_ns()
                )
        except Exception as exc:
            self.telemetry.internal_error("export_decision", exc)


_MAX_REMEMBERED_RUNS = 10_000
#: what an interrupt raised where the wrapper's event was fed kept from running
_SAVED_AT = {
    "observe_llm_response": "every later call of this run (the model's answer is not acted on)",
    "observe_handoff": "this handoff and every later call of this run",
}


def _local_root_outside_runs(follower: SpanFollower, span: Any) -> bool:
    """``span`` (an SDK span) has no parent, and its trace has no agent span or
    conversation: a call made outside any run and any parent span."""
    if getattr(span, "parent", _NO_PARENT_KNOWN) is not None:
        return False  # a parent (local or remote), or not an SDK span
    state = follower.traces.get(span.get_span_context().trace_id)
    return state is None or (state.root_agent() is None and not state.conversation)


_NO_PARENT_KNOWN = object()


def _remember(runs: OrderedDict[str, None], run_id: str) -> None:
    """Add a run id to a bounded record (the oldest dropped past the bound)."""
    runs[run_id] = None
    if len(runs) > _MAX_REMEMBERED_RUNS:
        with contextlib.suppress(KeyError):  # emptied by another thread meanwhile
            runs.popitem(last=False)


def _trace_hex(trace_id: int) -> str:
    return format(trace_id, "032x")


def _span_hex(span_id: int) -> str:
    return format(span_id, "016x")


def _detection_view(
    span: Any, name: str, attributes: Mapping[str, Any], state: TraceState, span_id: int
) -> SpanView:
    """The view of an ending SDK span, from the fields the processor reads directly."""
    if span.__class__ in PLAIN_CLASSES:
        sdk_span: Any = span  # (mypy narrows a class-membership test to `object`)
        status, end_time = sdk_span._status, sdk_span._end_time
    else:
        status, end_time = status_and_end(span)
    return detection_view(
        span, name, attributes, state.hex_trace_id, format(span_id, "016x"), status, end_time
    )


__all__ = ["LoopGuard", "OpenAgent", "RunHandle", "TraceState", "current_run"]
