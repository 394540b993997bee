"""What leaves the process: ``loopguard.decision`` span events, decision spans, metrics.

Span events carry ``loopguard.*`` attributes plus the GenAI guardrail attributes that fit a
loop guard (``gen_ai.guardrail.component.name``, ``.policy.id``, ``.policy.rule.id``,
``.result.type`` = ``action``, ``.result.value`` = the action, ``.risk.score``,
``.source``, ``.result.reason``; names from the GenAI semantic conventions' guardrail
page, development status). ``gen_ai.guardrail.risk.score`` keeps our own 0..1 scale.
A still-open span that takes a decision event also takes its action, risk, detectors and
reason as span attributes (the most severe decision's), for trace UIs that filter on
attributes rather than events.

Metrics use units, explicit histogram buckets that fit their values, and low-cardinality
labels only: never a run id, a signature or an argument value. Counts are recorded inside
the span context of the span that caused them, so the SDK's default trace-based exemplar
filter links them to traces.

Internal errors of any hook are counted in ``loopguard.internal_errors`` and logged once
per kind (a broken span must not flood the log of the program we watch).
"""

from __future__ import annotations

import enum
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.context import Context

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Action, Decision, RunEndState
from otel_loopguard.engine.events import Event, EventKind

logger = logging.getLogger("otel_loopguard")

SCOPE_NAME = "otel_loopguard"
DECISION_EVENT = "loopguard.decision"
DECISION_SPAN = "loopguard.decision"
RUN_SPAN = "loopguard.run"
RUN_STATE_ATTRIBUTE = "loopguard.run.state"
RUN_ID_ATTRIBUTE = "loopguard.run.id"
#: on a replan's decision event: ``queued`` (it goes into the run's next model request),
#: ``not_delivered`` (nothing here can deliver it), ``off`` (observe mode, or delivery off)
DELIVERY_ATTRIBUTE = "loopguard.recommendation.delivery"
#: detectors whose signals the presets answer with ``replan`` (a recommendation), and the
#: outcomes of ``loopguard.recoveries``: their series exist at zero from the start
REPLANNING_DETECTORS = (
    "read_only_loop",
    "shell_failure",
    "truncation",
    "premature_end",
    "repeated_text",
    "no_new_information",
)
RECOVERY_OUTCOMES = ("resolved", "persisted", "not_delivered")
#: on the span of the model request that carried a recommendation
DELIVERED_EVENT = "loopguard.recommendation.delivered"
ACTION_ATTRIBUTE = "loopguard.action"
RISK_ATTRIBUTE = "loopguard.risk_score"
#: what the span a decision was made on carries of it (its most severe decision's)
SPAN_DECISION_ATTRIBUTES = (
    ACTION_ATTRIBUTE,
    RISK_ATTRIBUTE,
    "loopguard.detectors",
    "loopguard.reason",
)

RISK_BUCKETS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
DURATION_BUCKETS = (
    0.000005,
    0.00001,
    0.000025,
    0.00005,
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
)
_EVIDENCE_MAX_CHARS = 2_000
_CONTENT_MAX_CHARS = 4_096


def _version() -> str:
    from otel_loopguard import __version__

    return __version__


#: At most one ``loopguard.processing.duration`` sample per span class per this many seconds.
#: An SDK histogram ``record`` costs 10-15 µs of CPU (attribute cleaning, hashing,
#: aggregation), as much as the rest of a span's processing; an agent's few spans a second
#: are all recorded, a process ending thousands of GenAI spans a second is sampled.
PROCESSING_SAMPLE_INTERVAL = 0.001


class Telemetry:
    """Instruments and span-event helpers, bound to one meter provider.

    ``meter_provider=None`` uses the global one: the API's proxy forwards to the real
    provider once ``opentelemetry-instrument`` or the application sets it.
    """

    def __init__(
        self,
        config: LoopGuardConfig,
        meter_provider: metrics.MeterProvider | None = None,
        active_runs: Callable[[], int] | None = None,
    ) -> None:
        self.config = config
        meter = metrics.get_meter(SCOPE_NAME, _version(), meter_provider=meter_provider)
        self._active_runs = active_runs
        self.decisions = meter.create_counter(
            "loopguard.decisions", unit="{decision}", description="Non-continue decisions"
        )
        self.signals = meter.create_counter(
            "loopguard.signals", unit="{signal}", description="Detector signals behind decisions"
        )
        self.interrupts = meter.create_counter(
            "loopguard.interrupts",
            unit="{interrupt}",
            description="Agent runs interrupted by enforcement (LoopGuardInterrupt raised)",
        )
        self.runs = meter.create_counter(
            "loopguard.runs", unit="{run}", description="Runs ended, by end state"
        )
        self.recoveries = meter.create_counter(
            "loopguard.recoveries",
            unit="{recommendation}",
            description=(
                "Replan recommendations by outcome: resolved (delivered to the model, the "
                "loop ended), persisted (delivered, the loop went on and was stopped), "
                "not_delivered"
            ),
        )
        #: what happens to a replan's recommendation (set by the guard: its deliveries)
        self.delivery_status: Callable[[Decision], str | None] | None = None
        self.internal_errors = meter.create_counter(
            "loopguard.internal_errors",
            unit="{error}",
            description="Errors caught inside otel-loopguard; the host program went on",
        )
        self.risk_score = meter.create_histogram(
            "loopguard.risk_score",
            unit="1",
            description="Risk score of non-continue decisions (0..1)",
            explicit_bucket_boundaries_advisory=list(RISK_BUCKETS),
        )
        self.processing_duration = meter.create_histogram(
            "loopguard.processing.duration",
            unit="s",
            description=(
                "Time otel-loopguard spent on one span or tool call "
                "(at most one sample per span class per millisecond)"
            ),
            explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
        )
        meter.create_observable_up_down_counter(
            "loopguard.active_runs",
            callbacks=[self._observe_active_runs],
            unit="{run}",
            description="Runs currently tracked",
        )
        # zero series from the start: "0 errors / 0 interrupts" on a dashboard, not "no data".
        # Also one per run end state and one signal and interrupt series per built-in
        # detector (names known in advance): Prometheus' increase() cannot count a series'
        # first value, so without them the first stopped run, signal or interrupt of a
        # process would be missing from the dashboard and the stop-rate alert. Decisions
        # carry agent and tool names nobody knows in advance: the dashboard's queries count
        # a decision series born inside their range instead
        self.internal_errors.add(0)
        for state in RunEndState:
            self.runs.add(0, {"state": state.value})
        for detector in _builtin_detector_names():
            self.signals.add(0, {"detector": detector})
            self.interrupts.add(0, {"detector": detector})
        for detector in REPLANNING_DETECTORS:
            for outcome in RECOVERY_OUTCOMES:
                self.recoveries.add(0, {"detector": detector, "outcome": outcome})
        self._logged: set[str] = set()
        self._logged_lock = threading.Lock()
        self._processing_attributes: dict[str, dict[str, str]] = {}
        #: span class -> earliest ``clock()`` of its next duration sample (the processor
        #: reads it before timing a span: most spans are not sampled and cost no call here)
        self.next_processing_sample: dict[Any, float] = {}
        self.clock: Callable[[], float] = time.perf_counter

    # -- metrics ---------------------------------------------------------------------------

    def _observe_active_runs(self, _options: Any) -> Iterable[metrics.Observation]:
        if self._active_runs is None:
            return []
        try:
            return [metrics.Observation(self._active_runs())]
        except Exception as exc:
            self.internal_error("active_runs", exc)
            return []

    def record_decision(
        self,
        decision: Decision,
        event: Event | None,
        context: Context | None = None,
        service: str | None = None,
    ) -> None:
        """Count a decision; ``service`` is the ``service.name`` of the program that sent
        the span (the detection service judges many programs' spans)."""
        detectors = decision.detectors
        labels = {
            "action": decision.action.value,
            "detector": detectors[0] if detectors else "none",
        }
        if service:
            labels["service.name"] = service
        if event is not None:
            if event.actor:
                labels["gen_ai.agent.name"] = event.actor
            if event.tool_name:
                labels["gen_ai.tool.name"] = event.tool_name
        self.decisions.add(1, labels, context=context)
        self.risk_score.record(decision.risk, {"action": decision.action.value}, context=context)
        for detector in detectors:
            self.signals.add(1, {"detector": detector}, context=context)

    def record_interrupt(self, decision: Decision, context: Context | None = None) -> None:
        detectors = decision.detectors
        self.interrupts.add(1, {"detector": detectors[0] if detectors else "none"}, context=context)

    def record_recovery(self, detector: str, outcome: str) -> None:
        """One replan recommendation's outcome (guard/deliveries.py)."""
        self.recoveries.add(1, {"detector": detector, "outcome": outcome})

    def record_run_end(self, state: RunEndState | str, context: Context | None = None) -> None:
        value = state.value if isinstance(state, RunEndState) else str(state)
        self.runs.add(1, {"state": value}, context=context)

    def record_processing(self, seconds: float, span_class: str) -> None:
        """Sample how long one span took us, per span class, rate-limited.

        Runs for every GenAI span: a span class's next sample is taken once
        :data:`PROCESSING_SAMPLE_INTERVAL` has passed since its last one (races between
        threads can let two through, which is harmless).
        """
        now = self.clock()
        next_sample = self.next_processing_sample
        if now < next_sample.get(span_class, 0.0):
            return
        if span_class in next_sample or len(next_sample) < 64:  # a handful of classes
            next_sample[span_class] = now + PROCESSING_SAMPLE_INTERVAL
        # one attribute dict per span class, made once
        attributes = self._processing_attributes.get(span_class)
        if attributes is None:
            value = span_class.value if isinstance(span_class, enum.Enum) else str(span_class)
            attributes = {"span.class": value}
            if len(self._processing_attributes) < 64:  # a handful of classes; stay bounded
                self._processing_attributes[span_class] = attributes
        self.processing_duration.record(seconds, attributes)

    def count_internal_error(self, where: str, exc: BaseException) -> None:
        """Count an error another part caught and logged itself (the monitor's detectors)."""
        self.internal_errors.add(1, {"error.type": type(exc).__name__, "where": where})

    def internal_error(self, kind: str, exc: BaseException) -> None:
        """Count and log (once per kind) an error caught inside otel-loopguard."""
        try:
            self.internal_errors.add(1, {"error.type": type(exc).__name__, "where": kind})
            with self._logged_lock:
                first = kind not in self._logged
                if first:
                    self._logged.add(kind)
            if first:
                logger.warning(
                    "otel-loopguard: internal error in %s (%s: %s); the program goes on, "
                    "later errors of this kind are only counted in loopguard.internal_errors",
                    kind,
                    type(exc).__name__,
                    exc,
                    exc_info=exc,
                )
        except Exception:  # pragma: no cover - the last line of defence
            pass

    # -- span events -----------------------------------------------------------------------

    def decision_attributes(self, decision: Decision, event: Event | None) -> dict[str, Any]:
        detectors = decision.detectors
        reason = decision.reason
        attrs: dict[str, Any] = {
            ACTION_ATTRIBUTE: decision.action.value,
            RISK_ATTRIBUTE: float(decision.risk),
            "loopguard.detectors": list(detectors),
            "loopguard.reason": reason or decision.action.value,
            "gen_ai.guardrail.component.name": "otel-loopguard",
            "gen_ai.guardrail.policy.id": self.config.policy,
            "gen_ai.guardrail.result.type": "action",
            "gen_ai.guardrail.result.value": decision.action.value,
            "gen_ai.guardrail.risk.score": float(decision.risk),
        }
        if decision.run_id:
            attrs[RUN_ID_ATTRIBUTE] = decision.run_id
        if detectors:
            attrs["gen_ai.guardrail.policy.rule.id"] = detectors[0]
            attrs["gen_ai.guardrail.result.reason"] = ", ".join(detectors)
        if decision.recommendation:
            attrs["loopguard.recommendation"] = decision.recommendation
            status = self.delivery_status(decision) if self.delivery_status is not None else None
            if status is not None:
                attrs[DELIVERY_ATTRIBUTE] = status
        if decision.end_state is not None:
            attrs[RUN_STATE_ATTRIBUTE] = decision.end_state.value
        if decision.reasons:
            evidence = [
                {"detector": s.detector, "kind": s.kind, "score": s.score, **s.evidence}
                for s in decision.reasons
            ]
            attrs["loopguard.evidence"] = _json(evidence, _EVIDENCE_MAX_CHARS)
        if event is not None:
            attrs["gen_ai.guardrail.source"] = attrs["loopguard.event.kind"] = EventKind(
                event.kind
            ).value
            if event.tool_name:
                attrs["gen_ai.tool.name"] = event.tool_name
            if event.actor:
                attrs["gen_ai.agent.name"] = event.actor
            if event.call_id:
                attrs["gen_ai.tool.call.id"] = event.call_id
            if self.config.capture_content:
                if event.arguments is not None:
                    attrs["loopguard.content.arguments"] = _json(
                        event.arguments, _CONTENT_MAX_CHARS
                    )
                if event.output is not None:
                    attrs["loopguard.content.output"] = _json(event.output, _CONTENT_MAX_CHARS)
                if event.signature:
                    attrs["loopguard.signature"] = event.signature
        return attrs

    def add_decision_event(self, span: Any, decision: Decision, event: Event | None) -> bool:
        """Add ``loopguard.decision`` to a still-recording span; False if it has ended.

        The span also takes the decision as attributes (:data:`SPAN_DECISION_ATTRIBUTES`),
        so "spans where otel-loopguard stopped" is one attribute filter in a trace UI
        (``loopguard.action = stop``). A span given several decisions keeps the most
        severe one's (the higher action; of equal actions the higher risk); every decision
        stays an event.
        """
        # an ended span, or one that never was a live SDK span (a ReadableSpan handed to
        # on_start by another processor chain): no events can go on it
        is_recording = getattr(span, "is_recording", None)
        if is_recording is None or not is_recording():
            return False
        span.add_event(DECISION_EVENT, self.decision_attributes(decision, event))
        self.mark_span(span, decision)
        return True

    def mark_span(self, span: Any, decision: Decision) -> None:
        """Write ``decision`` on a still-recording span as attributes only (no event),
        unless the span already carries a more severe one: the agent span a STOP
        interrupted, so a trace list of root spans filters on ``loopguard.action`` too."""
        is_recording = getattr(span, "is_recording", None)
        if is_recording is None or not is_recording() or not _more_severe_than_on(span, decision):
            return
        values = (
            decision.action.value,
            float(decision.risk),
            list(decision.detectors),
            decision.reason or decision.action.value,
        )
        span.set_attributes(dict(zip(SPAN_DECISION_ATTRIBUTES, values, strict=True)))

    def emit_decision_span(
        self,
        tracer: trace.Tracer,
        decision: Decision,
        event: Event | None,
        parent: trace.SpanContext,
        timestamp_ns: int | None,
    ) -> None:
        """A zero-duration ``loopguard.decision`` span in the same trace, with the event."""
        context = trace.set_span_in_context(trace.NonRecordingSpan(parent))
        span = tracer.start_span(DECISION_SPAN, context=context, start_time=timestamp_ns)
        attrs = self.decision_attributes(decision, event)
        span.set_attributes(attrs)
        span.add_event(DECISION_EVENT, attrs, timestamp=timestamp_ns)
        span.end(end_time=timestamp_ns)

    def emit_run_span(
        self,
        tracer: trace.Tracer,
        run_id: str,
        state: RunEndState,
        parent: trace.SpanContext,
        timestamp_ns: int | None,
        summary: Any = None,
    ) -> None:
        """A zero-duration ``loopguard.run`` child of an agent span we did not create.

        A span processor only sees a foreign agent span after it has ended, when it can no
        longer take attributes; this child carries its ``loopguard.run.state`` instead.
        """
        context = trace.set_span_in_context(trace.NonRecordingSpan(parent))
        attrs: dict[str, Any] = {RUN_ID_ATTRIBUTE: run_id, RUN_STATE_ATTRIBUTE: state.value}
        if summary is not None:
            counters = summary.counters
            attrs["loopguard.run.tool_calls"] = counters.tool_calls
            attrs["loopguard.run.steps"] = counters.steps
            attrs["loopguard.run.max_risk"] = float(summary.max_risk)
            attrs["loopguard.run.final_action"] = summary.final_action.value
        span = tracer.start_span(
            RUN_SPAN, context=context, start_time=timestamp_ns, attributes=attrs
        )
        span.end(end_time=timestamp_ns)


def _builtin_detector_names() -> list[str]:
    from otel_loopguard.engine.detectors import DEFAULT_DETECTORS

    return [str(factory.name) for factory in DEFAULT_DETECTORS]  # type: ignore[attr-defined]


def _more_severe_than_on(span: Any, decision: Decision) -> bool:
    """Does ``decision`` outrank the decision already written on ``span`` (if any)?"""
    current = getattr(span, "attributes", None)
    if not current:
        return True
    try:
        action = Action(current.get(ACTION_ATTRIBUTE))
    except ValueError:
        return True
    if decision.action != action:
        return decision.action > action
    risk = current.get(RISK_ATTRIBUTE)
    return not isinstance(risk, float) or decision.risk > risk


def _json(value: Any, limit: int) -> str:
    try:
        text = json.dumps(value, default=repr, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
