"""Run the scripted agents under the real plugin and tell the story as it happens.

The demo agent is written the way a user writes an agent without a framework: a loop that
asks a (scripted) model for the next tool call, runs the tool through the enforcement gate
(:meth:`LoopGuard.tool_call`), and feeds errors back to the model. Everything the user would
see in production happens for real: spans through the SDK and our span processor, decision
events, metrics, ``LoopGuardInterrupt`` in enforce mode. Only the model and the tools are
scripted, so the demo needs no API key and no network.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind, Tracer

from otel_loopguard.demo.scenarios import Scenario, Turn
from otel_loopguard.demo.timeline import Timeline
from otel_loopguard.engine.decisions import Action, Decision, LoopGuardInterrupt
from otel_loopguard.engine.events import Event
from otel_loopguard.guard import LoopGuard
from otel_loopguard.kit.model_turn import ModelCall
from otel_loopguard.kit.recommendations import can_deliver, deliver_waiting

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
    #: recommendations that reached the model's request (enforce mode)
    nudges: list[str] = field(default_factory=list)


def build_tracer_provider(
    service_name: str, otlp: OtlpExport | None = None
) -> tuple[TracerProvider, CollectingExporter]:
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    collector = CollectingExporter()
    provider.add_span_processor(SimpleSpanProcessor(collector))
    exporter = otlp.span_exporter() if otlp is not None else None
    if exporter is not None:
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider, collector


#: seconds the demo gives its OTLP exporters per export, unless OTEL_EXPORTER_OTLP_TIMEOUT says
EXPORT_TIMEOUT = 5.0
#: seconds the quick check that something listens at the endpoint may take
PROBE_TIMEOUT = 1.0
_TIMEOUT_VARIABLES = {
    "spans": ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"),
    "metrics": ("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"),
}


def otlp_endpoints(environ: Mapping[str, str]) -> dict[str, str]:
    """Where OTLP spans and metrics go (``{"spans": url, "metrics": url}``), as the SDK reads it."""
    general = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    endpoints = {}
    for signal, variable in (
        ("spans", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
        ("metrics", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"),
    ):
        endpoint = environ.get(variable, "").strip() or general
        if endpoint:
            endpoints[signal] = endpoint
    return endpoints


def unreachable(endpoint: str, timeout: float = PROBE_TIMEOUT) -> str | None:
    """Why nothing answers at ``endpoint`` (one short TCP connect); ``None`` if something does."""
    parsed = urlsplit(endpoint if "://" in endpoint else f"http://{endpoint}")
    if parsed.scheme == "unix":
        return None  # a socket file: left to the exporter
    try:
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
    except ValueError:
        return "not a valid address"
    if not parsed.hostname:
        return "not a valid address"
    try:
        with socket.create_connection((parsed.hostname, port), timeout=timeout):
            return None
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        return reason[:1].lower() + reason[1:]


class OtlpExport:
    """The demo's OTLP export: the endpoints, whether anything listens there, what got through.

    Each endpoint gets one quick TCP connect before the demo starts: one nothing answers at
    is left out (no exporter, no retries, no waiting) and :meth:`unreachable_line` says so
    once. The exporters count their exports, so :meth:`report` claims only what happened;
    their own retry logs are kept quiet, the report says it once instead.
    """

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        self._env = env
        configured = otlp_endpoints(env)
        reasons = {endpoint: unreachable(endpoint) for endpoint in set(configured.values())}
        self.unreachable = {e: r for e, r in reasons.items() if r is not None}
        self.endpoints = {s: e for s, e in configured.items() if e not in self.unreachable}
        self._lock = threading.Lock()
        self._counts = {signal: [0, 0] for signal in self.endpoints}  # [succeeded, failed]
        if self.endpoints:
            quiet = logging.getLogger("opentelemetry.exporter.otlp")
            quiet.addHandler(logging.NullHandler())
            quiet.propagate = False

    def unreachable_line(self) -> str | None:
        """One line for the endpoints nothing answers at, or ``None``."""
        if not self.unreachable:
            return None
        where = ", ".join(f"{e} ({r})" for e, r in sorted(self.unreachable.items()))
        return (
            f"otel-loopguard demo: could not reach the OTLP endpoint {where}; nothing is "
            "exported there (is the viewing stack up?)"
        )

    def _timeout(self, signal: str) -> dict[str, float]:
        if any(self._env.get(name) for name in _TIMEOUT_VARIABLES[signal]):
            return {}
        return {"timeout": EXPORT_TIMEOUT}

    def _protocol(self, signal: str) -> str:
        specific = f"OTEL_EXPORTER_OTLP_{'TRACES' if signal == 'spans' else 'METRICS'}_PROTOCOL"
        general = self._env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        return self._env.get(specific) or general or "http/protobuf"

    def _count(self, signal: str, ok: bool) -> None:
        with self._lock:
            self._counts[signal][0 if ok else 1] += 1

    def span_exporter(self) -> SpanExporter | None:
        if "spans" not in self.endpoints:
            return None
        if self._protocol("spans") == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # type: ignore[assignment]
                OTLPSpanExporter,
            )
        counted = _counting(OTLPSpanExporter, self, "spans", SpanExportResult)
        return counted(**self._timeout("spans"))  # type: ignore[no-any-return]

    def metric_reader(self) -> Any:
        """A periodic OTLP metric reader (every 2 s), or ``None`` without a reachable endpoint."""
        if "metrics" not in self.endpoints:
            return None
        from opentelemetry.sdk.metrics.export import (
            MetricExportResult,
            PeriodicExportingMetricReader,
        )

        if self._protocol("metrics") == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
        else:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import (  # type: ignore[assignment]
                OTLPMetricExporter,
            )
        counted = _counting(OTLPMetricExporter, self, "metrics", MetricExportResult)
        exporter = counted(**self._timeout("metrics"))
        return PeriodicExportingMetricReader(exporter, export_interval_millis=2_000)

    def report(self) -> str | None:
        """After the exporters shut down: what reached each endpoint, in one line."""
        exported: dict[str, list[str]] = {}
        failed: dict[str, list[str]] = {}
        for signal, endpoint in self.endpoints.items():
            succeeded, failures = self._counts[signal]
            if failures:
                noun = "span" if signal == "spans" else "metric"
                tries = succeeded + failures
                failed.setdefault(endpoint, []).append(f"{failures} of {tries} {noun} exports")
            elif succeeded:
                exported.setdefault(endpoint, []).append(signal)
        if failed:
            where = "; ".join(f"to {e}: {', '.join(f)}" for e, f in failed.items())
            return f"otel-loopguard demo: OTLP export failed {where} (is the viewing stack up?)"
        if not exported:
            return None
        return "; ".join(f"{' and '.join(s)} exported to {e}" for e, s in exported.items())


def _counting(exporter_class: type, export: OtlpExport, signal: str, results: Any) -> type:
    """``exporter_class`` whose ``export`` counts its outcome (and fails instead of raising)."""

    def counted_export(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            result = super(subclass, self).export(*args, **kwargs)
        except Exception:
            export._count(signal, False)
            return results.FAILURE
        export._count(signal, result is results.SUCCESS)
        return result

    name = f"Counted{exporter_class.__name__}"
    subclass = type(name, (exporter_class,), {"export": counted_export})
    return subclass


class DecisionFeed:
    """One listener for the whole demo; each scenario drains what its own calls produced."""

    def __init__(self, guard: LoopGuard) -> None:
        self.pending: list[Decision] = []
        guard.on_decision(self._collect)
        can_deliver("demo")  # the demo's model requests carry recommendations

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
    """Run one scripted agent to its end or to its interrupt.

    Where the first STOP came (before the model turn, before the tool ran, after it) sets
    what stopping saved: in ``enforce`` mode what the interrupt kept from running, in
    ``observe`` mode what it would have kept from running.
    """
    outcome = Outcome(scenario)
    pending = feed.pending
    pending.clear()
    timeline.scenario(scenario, guard.config.mode)
    stop_point: tuple[int, bool] | None = None  # (first turn kept from running, its model ran)
    caught: LoopGuardInterrupt | None = None
    index, phase = 0, "model"  # model: before the model turn; call: before the tool; tool: after

    def note_stop() -> None:
        nonlocal stop_point
        if stop_point is None and any(d.action is Action.STOP for d in pending):
            stop_point = {
                "model": (index, False),
                "call": (index, True),
                "tool": (index + 1, False),
            }[phase]

    turns = list(scenario.turns)
    messages: list[str] = []  # what the model is sent: our nudges are what the demo shows
    try:
        with guard.agent_run(tracer, scenario.agent, attributes={"gen_ai.provider.name": "demo"}):
            index = 0
            while index < len(turns):
                phase = "model"
                guard.preflight_llm()
                note_stop()
                nudge = _deliver(guard, messages)
                if nudge is not None:
                    outcome.nudges.append(nudge)
                    timeline.nudged(nudge)
                    if scenario.heeded is not None:  # the model changes course
                        turns[index:] = scenario.heeded
                turn = turns[index]
                _model_turn(tracer, turn)
                outcome.tokens += turn.input_tokens + turn.output_tokens
                phase = "call"
                if turn.tool is None:
                    # a decision on the last model turn (repeated tool steps) is shown too
                    timeline.decisions(pending)
                    outcome.decisions.extend(pending)
                    pending.clear()
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
                        note_stop()
                        phase = "tool"
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
                    if phase != "tool":
                        timeline.vetoed()
                    elif not reported:  # a STOP raised right after the tool returned
                        if turn.error is not None:
                            timeline.failure(turn.error)
                        else:
                            timeline.result(turn.result or "")
                    note_stop()
                    timeline.decisions(pending)
                    outcome.decisions.extend(pending)
                    pending.clear()
                if pace:
                    time.sleep(pace)
                index += 1
    except LoopGuardInterrupt as interrupt:
        note_stop()
        timeline.decisions(pending)
        outcome.decisions.extend(pending)
        pending.clear()
        outcome.interrupted = interrupt.decision
        caught = interrupt
        if stop_point is None:  # an interrupt with no STOP seen here: where it was raised
            where = {"model": (index, False), "call": (index, True)}
            stop_point = where.get(phase, (index + 1, False))
    if stop_point is not None:
        outcome.saved_tool_calls, outcome.saved_tokens = _left_after(turns, *stop_point)
    if caught is not None:
        timeline.interrupted(caught, outcome, vetoed=phase != "tool")
    else:
        timeline.finished(outcome, stopped_in_observe=stop_point is not None)
    return outcome


def _deliver(guard: LoopGuard, messages: list[str]) -> str | None:
    """The demo's model request: a recommendation waiting for the run goes into it, as a
    framework package adds it to its framework's request (enforce mode only)."""
    call = ModelCall(None, (messages,), {})

    def add(call: ModelCall, text: str) -> bool:
        call.args = ([*messages, text],)
        return True

    delivered = deliver_waiting(guard, call, add, "demo")
    return delivered.text if delivered is not None else None


def _left_after(turns: list[Turn], first: int, model_turn_ran: bool) -> tuple[int, int]:
    """Tool calls and tokens of the script from turn ``first`` on (its model turn excluded
    when it already ran): what a STOP there keeps from being spent."""
    rest = turns[first:]
    calls = sum(1 for turn in rest if turn.tool is not None)
    tokens = sum(turn.input_tokens + turn.output_tokens for turn in rest)
    if model_turn_ran and rest:
        tokens -= rest[0].input_tokens + rest[0].output_tokens
    return calls, tokens


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
