"""What leaves the service for each decision: metrics, a decision span, the STOP.

* metrics: the same ``loopguard.*`` instruments as in-process (:class:`Telemetry`), the
  decision count labelled with the ``service.name`` of the program that sent the span;
* a ``loopguard.decision`` span, child of the span the decision was made on, so the trace
  that looped shows it (our own instrumentation scope: if it comes back to this service
  through the same Collector, the replayer leaves it out);
* one WARNING line of the ``otel_loopguard.serve`` logger (stderr unless logging is set up)
  per STOP, when it stops a run (a run's later calls repeat the same STOP and say nothing):
  the service that sent the spans, then the run, agent, tool and reason in the words of the
  in-process interrupt's line (:func:`~otel_loopguard.engine.interrupt.stop_summary`);
* with a shared run store (``OTEL_LOOPGUARD_STORE``): the run's STOP, which gates in other
  processes (and agents in other languages reading the documented key) read before their
  next call. The store fails open within its timeout, as everywhere.

Each output catches and counts its own failure (``loopguard.internal_errors``): one broken
exporter or an unreachable store never stops the others, nor the judging of spans.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanContext, TraceFlags

from otel_loopguard.analyze.replay import DecisionRecord, RunRecord
from otel_loopguard.engine.decisions import Action, Decision
from otel_loopguard.engine.events import Event
from otel_loopguard.engine.interrupt import stop_summary
from otel_loopguard.engine.run_identity import RunKey
from otel_loopguard.guard.deliveries import NOT_DELIVERED
from otel_loopguard.serve.state_sync import RunStateSync
from otel_loopguard.telemetry import SCOPE_NAME, Telemetry

_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
logger = logging.getLogger("otel_loopguard.serve")


class DecisionOutput:
    def __init__(
        self,
        telemetry: Telemetry,
        tracer: trace.Tracer,
        store: Any = None,
        state_sync: RunStateSync | None = None,
    ) -> None:
        self.telemetry = telemetry
        self.tracer = tracer
        self.store = store
        self.state_sync = state_sync
        self.decision_spans = 0
        self.stops_stored = 0
        # the service sees spans after the fact: it can never put a replan's recommendation
        # into the agent's next model request, and says so on each replan it exports
        telemetry.delivery_status = _never_delivered

    def decided(
        self,
        record: RunRecord,
        item: DecisionRecord,
        decision: Decision,
        event: Event,
        service: str | None,
    ) -> None:
        telemetry = self.telemetry
        parent: SpanContext | None = None
        if item.trace_id and item.span_id:
            try:
                parent = SpanContext(int(item.trace_id, 16), int(item.span_id, 16), True, _SAMPLED)
            except ValueError:  # ids are hex from the decoder; a plug-in's event may differ
                parent = None
        try:
            # in the decided span's context: the SDK's trace-based exemplar filter links
            # the count to the agent's trace, as in-process
            context = trace.set_span_in_context(trace.NonRecordingSpan(parent)) if parent else None
            telemetry.record_decision(decision, event, context=context, service=service)
        except Exception as exc:
            telemetry.internal_error("serve.decision_metrics", exc)
        if parent is not None:
            try:
                telemetry.emit_decision_span(self.tracer, decision, event, parent, time.time_ns())
                self.decision_spans += 1
            except Exception as exc:
                telemetry.internal_error("serve.decision_span", exc)
        if decision.action is Action.REPLAN and decision.recommendation:
            try:
                detectors = decision.detectors
                telemetry.record_recovery(detectors[0] if detectors else "none", NOT_DELIVERED)
            except Exception as exc:
                telemetry.internal_error("serve.recoveries", exc)
        if decision.action is Action.STOP and record.first_stop is item:
            try:
                say_stop(record, item, decision, service)
            except Exception as exc:
                telemetry.internal_error("serve.stop_line", exc)
        if decision.action is Action.STOP and self.store is not None:
            try:
                self._store_stop(record.run_id, decision)
                self.stops_stored += 1
            except Exception as exc:
                telemetry.internal_error("serve.store", exc)
            if self.state_sync is not None and record.keyed_by == RunKey.CONVERSATION:
                self.state_sync.save(record.run_id)  # at once on STOP, as in-process

    def _store_stop(self, run_id: str, decision: Decision) -> None:
        """The run's STOP under its documented key (docs/fleet.md), with the decision."""
        from otel_loopguard.engine.monitor.persistence import decision_to_dict
        from otel_loopguard.engine.store import StopRecord

        record = StopRecord(
            detectors=tuple(decision.detectors),
            reason=decision.reason or decision.action.value,
            time=time.time(),
            decision=decision_to_dict(decision),
        )
        self.store.write_stop(run_id, record)

    def run_ended(self, record: RunRecord) -> None:
        if self.state_sync is not None:
            self.state_sync.run_ended(record.run_id)
        try:
            self.telemetry.record_run_end(record.end_state or "completed")
        except Exception as exc:
            self.telemetry.internal_error("serve.run_metrics", exc)


def say_stop(
    record: RunRecord, item: DecisionRecord, decision: Decision, service: str | None
) -> None:
    """The one line an operator sees when the service stops a run."""
    logger.warning(
        "otel-loopguard serve: STOP decided for service %s, %s",
        service or "unknown_service",
        stop_summary(
            decision,
            agent=record.agent,
            tool=item.tool_name,
            tool_calls=record.tool_calls,
            tokens=record.input_tokens + record.output_tokens,
        ),
    )


def _never_delivered(decision: Decision) -> str | None:
    """``loopguard.recommendation.delivery`` of a decision the service exports."""
    if decision.action is Action.REPLAN and decision.recommendation:
        return NOT_DELIVERED
    return None


def decision_tracer(provider: Any) -> trace.Tracer:
    """The tracer of decision spans: our scope name, which the replayer recognises."""
    from otel_loopguard.telemetry import _version

    return trace.get_tracer(SCOPE_NAME, _version(), tracer_provider=provider)
