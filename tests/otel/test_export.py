"""Decisions leave the process: real OTLP export to a receiver in the test, real metrics."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from otel_loopguard_testing import OTLPReceiver
from prometheus_client import CollectorRegistry, generate_latest

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import LoopGuardInterrupt, RunEndState
from otel_loopguard.guard import LoopGuard
from otel_loopguard.guard.decorators import agent_run, loopguard_tool
from otel_loopguard.processor import LoopGuardSpanProcessor

from .helpers import Stack, foreign_fetch_loop, foreign_tool_span


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    return getattr(any_value, kind) if kind else None


def _attrs(key_values: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in key_values}


def test_otlp_export_carries_decisions_and_run_state(receiver: OTLPReceiver) -> None:
    provider = TracerProvider()
    guard = LoopGuard(LoopGuardConfig(mode="enforce"), tracer_provider=provider)
    provider.add_span_processor(LoopGuardSpanProcessor(guard))
    endpoint = f"http://127.0.0.1:{receiver.server_address[1]}/v1/traces"
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    tracer = provider.get_tracer("agent")

    # a foreign agent (semconv spans) looping, seen by the processor
    foreign_fetch_loop(tracer)

    # our gate, enforcing
    @loopguard_tool(tracer=tracer, guard=guard)
    def lookup(key: str) -> str:
        return "missing"

    with pytest.raises(LoopGuardInterrupt), agent_run("keeper", tracer=tracer, guard=guard):
        for _ in range(10):
            lookup("k")
    assert provider.force_flush(10_000)

    spans = [
        span
        for request in receiver.requests
        for resource_spans in request.resource_spans
        for scope_spans in resource_spans.scope_spans
        for span in scope_spans.spans
    ]
    by_name: dict[str, list[Any]] = {}
    for span in spans:
        by_name.setdefault(span.name, []).append(span)

    scout = by_name["invoke_agent scout"][0]
    events = [_attrs(e.attributes) for e in scout.events if e.name == "loopguard.decision"]
    stop = [e for e in events if e["loopguard.action"] == "stop"]
    assert stop, events
    assert stop[0]["loopguard.run.id"] == f"{scout.trace_id.hex()}:{scout.span_id.hex()}"
    assert isinstance(stop[0]["loopguard.detectors"], list) and stop[0]["loopguard.detectors"]
    assert 0 < stop[0]["loopguard.risk_score"] <= 1
    assert stop[0]["gen_ai.guardrail.component.name"] == "otel-loopguard"
    assert json.loads(stop[0]["loopguard.evidence"])
    (run,) = by_name["loopguard.run"]
    assert run.parent_span_id == scout.span_id
    # enforce mode, but no gate wraps the scout's calls: the STOP was decided, not enforced
    assert _attrs(run.attributes)["loopguard.run.state"] == "stop_not_enforced"

    keeper = by_name["invoke_agent keeper"][0]
    assert _attrs(keeper.attributes)["loopguard.run.state"] == "stopped"
    tool_events = [
        _attrs(e.attributes)
        for span in by_name["execute_tool lookup"]
        for e in span.events
        if e.name == "loopguard.decision"
    ]
    assert any(e["loopguard.action"] == "stop" for e in tool_events)
    # content stays private without CAPTURE_CONTENT
    for span in by_name["execute_tool lookup"]:
        assert "gen_ai.tool.call.arguments" not in _attrs(span.attributes)
    assert not any("loopguard.content.arguments" in e for e in tool_events)


def _loop(stack: Stack, calls: int = 5) -> None:
    @loopguard_tool(tracer=stack.tracer, guard=stack.guard)
    def search(query: str) -> str:
        return "no results"

    with agent_run("researcher", tracer=stack.tracer, guard=stack.guard):
        for _ in range(calls):
            search("pricing")


def test_metrics_in_memory_with_units_buckets_and_exemplars(stack: Stack) -> None:
    _loop(stack)
    data = stack.reader.get_metrics_data()
    metrics = {
        m.name: m for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
    }
    assert metrics["loopguard.decisions"].unit == "{decision}"
    assert metrics["loopguard.processing.duration"].unit == "s"
    (risk,) = metrics["loopguard.risk_score"].data.data_points[:1]
    assert tuple(risk.explicit_bounds) == (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
    duration = metrics["loopguard.processing.duration"].data.data_points[0]
    assert duration.explicit_bounds[0] == 0.000005 and duration.explicit_bounds[-1] == 0.05
    assert stack.metric_total("loopguard.decisions", action="stop") == 1
    assert stack.metric_total("loopguard.runs", state="stopped") == 1
    for point in metrics["loopguard.decisions"].data.data_points:
        assert set(point.attributes) <= {
            "action",
            "detector",
            "gen_ai.agent.name",
            "gen_ai.tool.name",
        }
    # recorded inside the tool span's context: the exemplar points at the trace
    (stop_point,) = [
        p
        for p in metrics["loopguard.decisions"].data.data_points
        if p.attributes["action"] == "stop"
    ]
    assert stop_point.exemplars and stop_point.exemplars[0].trace_id
    tool_traces = {s.context.trace_id for s in stack.spans("execute_tool search")}
    assert stop_point.exemplars[0].trace_id in tool_traces
    active = metrics["loopguard.active_runs"].data.data_points[0].value
    assert active == 0


def test_prometheus_exporter_text_output() -> None:
    registry = CollectorRegistry()
    reader = PrometheusMetricReader(registry=registry)
    meter_provider = MeterProvider(metric_readers=[reader])
    provider = TracerProvider()
    guard = LoopGuard(LoopGuardConfig(), meter_provider=meter_provider, tracer_provider=provider)
    provider.add_span_processor(LoopGuardSpanProcessor(guard))
    stack = Stack(guard, provider, None, None, provider.get_tracer("t"))  # type: ignore[arg-type]
    _loop(stack)
    text = generate_latest(registry).decode()
    decisions = [line for line in text.splitlines() if line.startswith("loopguard_decisions_total")]
    assert any('action="stop"' in line and 'detector="repetition"' in line for line in decisions)
    buckets = {
        line.split('le="')[1].split('"')[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith('loopguard_risk_score_bucket{action="stop"')
    }
    assert list(buckets)[:2] == ["0.0", "0.1"] and buckets["+Inf"] == 1.0
    assert buckets["0.0"] == 0.0  # a stop is never a zero-risk decision
    assert "loopguard_processing_duration_seconds_bucket" in text
    runs = {
        line.split('state="')[1].split('"')[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("loopguard_runs_total{")
    }
    assert runs["stopped"] == 1.0
    # every end state has a series from the start, so Prometheus' increase() counts a
    # state's first run (a series that appears at 1 counts as no increase)
    assert {state.value for state in RunEndState} <= set(runs)
    assert runs["budget_exceeded"] == 0.0
    assert "run_id" not in text and "pricing" not in text  # no run id, no argument value


def _processing_samples(stack: Stack, span_class: str) -> int:
    return sum(
        point.count
        for point in stack.metric_points("loopguard.processing.duration")
        if point.attributes.get("span.class") == span_class
    )


def test_processing_duration_samples_each_span_class_at_most_once_per_millisecond(
    stack: Stack,
) -> None:
    """A burst of GenAI spans costs one histogram record, spaced spans are all recorded.

    An SDK histogram record costs as much as the rest of a span's processing, so a process
    ending thousands of GenAI spans a second must not pay it for each of them.
    """
    now = [100.0]
    stack.guard.telemetry.clock = lambda: now[0]

    def tool_span(index: int) -> None:
        with foreign_tool_span(stack.tracer, "lookup", arguments=f'{{"id": {index}}}'):
            pass

    for index in range(20):  # one instant: a burst
        tool_span(index)
    assert _processing_samples(stack, "tool") == 1
    for index in range(20, 30):  # 2 ms apart: each one recorded
        now[0] += 0.002
        tool_span(index)
    assert _processing_samples(stack, "tool") == 11
