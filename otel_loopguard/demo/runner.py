"""Run the scripted agents under the real plugin and tell the story as it happens.

The demo agent is written the way a user writes an agent without a framework: a loop that
asks a (scripted) model for the next tool call, runs the tool through the enforcement gate
(:meth:`LoopGuard.tool_call`), and feeds errors back to the model. Everything the user would
see in production happens for real: spans through the SDK and our span processor, decision
events, metrics, ``LoopGuardInterrupt`` in enforce mode. Only the model and the tools are
scripted, so the demo needs no API key and no network.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind, Tracer

from otel_loopguard.demo.scenarios import Scenario, Turn
from otel_loopguard.demo.timeline import Timeline
from otel_loopguard.engine.decisions import Action, Decision, LoopGuardInterrupt
from otel_loopguard.engine.events import Event
from otel_loopguard.guard import LoopGuard

MODEL = "scripted-model"


class ToolFailure(Exception):
    """What a failing demo tool raises; the agent hands it back to the model, as agents do."""


class CollectingExporter(SpanExporter):
    """Keeps the demo's spans so they can be written as an OTLP JSON trace file."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def export(self, spans: Any) -> SpanExportResult:
        self.spans.extend(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


@dataclass
class Outcome:
    """What one scenario did, and what the script would still have done without a stop."""

    scenario: Scenario
    tool_calls: int = 0
    tokens: int = 0
    interrupted: Decision | None = None
    answer: str | None = None
    saved_tool_calls: int = 0
    saved_tokens: int = 0
    decisions: list[Decision] = field(default_factory=list)


def build_tracer_provider(service_name: str) -> tuple[TracerProvider, CollectingExporter]:
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    collector = CollectingExporter()
    provider.add_span_processor(SimpleSpanProcessor(collector))
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
    )
    if endpoint:
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        provider.add_span_processor(BatchSpanProcessor(_otlp_span_exporter()))
    return provider, collector


def _protocol() -> str:
    return (
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    )


def _otlp_span_exporter() -> SpanExporter:
    if _protocol() == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # type: ignore[assignment]
            OTLPSpanExporter,
        )
    return OTLPSpanExporter()


def otlp_metric_reader() -> Any:
    """A periodic OTLP metric reader when an endpoint is configured, else ``None``."""
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"
    )
    if not endpoint:
        return None
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    if _protocol() == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
    else:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import (  # type: ignore[assignment]
            OTLPMetricExporter,
        )
    return PeriodicExportingMetricReader(OTLPMetricExporter(), export_interval_millis=2_000)


class DecisionFeed:
    """One listener for the whole demo; each scenario drains what its own calls produced."""

    def __init__(self, guard: LoopGuard) -> None:
        self.pending: list[Decision] = []
        guard.on_decision(self._collect)

    def _collect(self, decision: Decision, _event: Event) -> None:
        self.pending.append(decision)


def run_scenario(
    scenario: Scenario,
    guard: LoopGuard,
    tracer: Tracer,
    timeline: Timeline,
    feed: DecisionFeed,
    pace: float,
) -> Outcome:
    """Run one scripted agent to its end or to its interrupt."""
    outcome = Outcome(scenario)
    pending = feed.pending
    pending.clear()
    timeline.scenario(scenario, guard.config.mode)
    executed_turns = 0
    turn: Turn | None = None
    ran = False
    try:
        with guard.agent_run(tracer, scenario.agent, attributes={"gen_ai.provider.name": "demo"}):
            for index, turn in enumerate(scenario.turns):
                ran = False
                guard.preflight_llm()
                _model_turn(tracer, turn)
                outcome.tokens += turn.input_tokens + turn.output_tokens
                executed_turns = index + 1
                if turn.tool is None:
                    outcome.answer = turn.answer
                    timeline.answer(turn.answer or "")
                    break
                timeline.call(outcome.tool_calls + 1, turn)
                reported = False
                try:
                    with guard.tool_call(
                        tracer,
                        turn.tool,
                        turn.arguments,
                        call_id=f"call_{index + 1}",
                        agent_name=turn.agent,
                    ) as call:
                        ran = True
                        outcome.tool_calls += 1
                        if turn.error is not None:
                            raise ToolFailure(turn.error)
                        call.set_result(turn.result)
                    timeline.result(turn.result or "")
                    reported = True
                except ToolFailure as failure:
                    timeline.failure(str(failure))
                    reported = True
                finally:
                    if not ran:
                        timeline.vetoed()
                    elif not reported:  # a STOP raised right after the tool returned
                        if turn.error is not None:
                            timeline.failure(turn.error)
                        else:
                            timeline.result(turn.result or "")
                    timeline.decisions(pending)
                    outcome.decisions.extend(pending)
                    pending.clear()
                if pace:
                    time.sleep(pace)
    except LoopGuardInterrupt as interrupt:
        timeline.decisions(pending)
        outcome.decisions.extend(pending)
        pending.clear()
        outcome.interrupted = interrupt.decision
        # the interrupted turn's tool call is saved too when the veto kept it from running
        remaining = scenario.turns[executed_turns - (0 if ran else 1) :]
        outcome.saved_tool_calls = sum(1 for t in remaining if t.tool is not None)
        outcome.saved_tokens = sum(t.input_tokens + t.output_tokens for t in remaining)
        if not ran:
            outcome.saved_tokens -= turn.input_tokens + turn.output_tokens if turn else 0
        timeline.interrupted(interrupt, outcome, vetoed=not ran)
    if outcome.interrupted is None:
        stops = [d for d in outcome.decisions if d.action is Action.STOP]
        timeline.finished(outcome, stopped_in_observe=bool(stops))
    return outcome


def _model_turn(tracer: Tracer, turn: Turn) -> None:
    """A GenAI ``chat`` span, as a model instrumentation would make it; the processor maps it."""
    finish = "tool_calls" if turn.tool is not None else "stop"
    with tracer.start_as_current_span(
        f"chat {MODEL}",
        kind=SpanKind.CLIENT,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "demo",
            "gen_ai.request.model": MODEL,
            "gen_ai.response.model": MODEL,
            "gen_ai.agent.name": turn.agent,
            "gen_ai.usage.input_tokens": turn.input_tokens,
            "gen_ai.usage.output_tokens": turn.output_tokens,
            "gen_ai.response.finish_reasons": (finish,),
        },
    ):
        pass
