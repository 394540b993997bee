"""With content capture off, no tool argument or result text leaves the process.

A unique marker is put into the arguments and results (successful calls) of agents that loop
in every way the detectors know (the same search, a shell tool whose output names a missing
module, a read-only loop, a handoff cycle, a model turn requesting the calls), in
``enforce`` mode so decisions, interrupts and run ends all happen. Then the marker is looked
for in:

- every exported span, raw: the bytes the real OTLP/HTTP exporter sent to a receiver in the
  test, and the in-memory exporter's spans (attributes, events, event attributes, status);
- every metric: the Prometheus text output and the in-memory reader's data as JSON;
- every log line at DEBUG, from every logger;
- every decision handed to ``on_decision`` listeners: reason, recommendation, signals and
  their evidence; and every run's exported state.

A second marker goes into the arguments of spans another instrumentation made (it recorded
them, as it may); that marker must appear nowhere but in those attributes themselves.

With ``OTEL_LOOPGUARD_CAPTURE_CONTENT=true`` the same run does export the marker, so the
test can fail. Exception messages of failing tools are recorded as OpenTelemetry records
them (``exception`` events, docs/python-api.md), so the marker stays out of them.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otel.helpers import foreign_agent_span, foreign_tool_span
from otel_loopguard_testing import OTLPReceiver
from prometheus_client import CollectorRegistry, generate_latest

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Decision, LoopGuardInterrupt
from otel_loopguard.guard import LoopGuard
from otel_loopguard.guard.decorators import agent_run, loopguard_tool
from otel_loopguard.processor import LoopGuardSpanProcessor

MARKER = "zqx7marker"  # in our gate's arguments and results
FOREIGN = "vjk4foreign"  # in arguments another instrumentation recorded on its spans


@dataclass
class Outputs:
    otlp_bytes: bytes
    spans: list[Any]
    prometheus: str
    metrics_json: str
    logs: str
    decisions: list[str] = field(default_factory=list)
    run_states: list[str] = field(default_factory=list)


def _run_agents(receiver: OTLPReceiver, capture: bool, caplog: pytest.LogCaptureFixture) -> Outputs:
    port = receiver.server_address[1]
    registry = CollectorRegistry()
    memory_reader = InMemoryMetricReader()
    meter_provider = MeterProvider(
        metric_readers=[memory_reader, PrometheusMetricReader(registry=registry)]
    )
    provider = TracerProvider()
    guard = LoopGuard(
        LoopGuardConfig(mode="enforce", capture_content=capture, read_only_loop_threshold=3),
        meter_provider=meter_provider,
        tracer_provider=provider,
    )
    provider.add_span_processor(LoopGuardSpanProcessor(guard))
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    otlp = BatchSpanProcessor(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces"))
    provider.add_span_processor(otlp)
    tracer = provider.get_tracer("tests.privacy")
    decisions: list[str] = []
    run_states: list[str] = []

    @guard.on_decision
    def remember(decision: Decision, event: Any) -> None:
        decisions.append(repr(decision))
        decisions.append(json.dumps([s.evidence for s in decision.reasons], default=repr))
        # the event itself is not checked: it is the caller's own data, handed to its own
        # callback in-process (it carries the arguments so a callback may act on them)
        decisions.append(f"{decision.reason} {decision.recommendation}")
        state = guard.monitor.export_run(decision.run_id)
        run_states.append(json.dumps(state, default=repr))

    @loopguard_tool(tracer=tracer, guard=guard)
    def search(query: str) -> str:
        return f"no results for {query} ({MARKER} result)"

    @loopguard_tool(tracer=tracer, guard=guard)
    def bash(command: str) -> str:
        return f"ModuleNotFoundError: No module named '{MARKER}_mod'"

    @loopguard_tool(tracer=tracer, guard=guard)
    def read_file(path: str) -> str:
        return f"contents of {path}: {MARKER} secret"

    @loopguard_tool(tracer=tracer, guard=guard, name="transfer_to_billing")
    def to_billing(note: str) -> str:
        return f"handed off ({MARKER})"

    @loopguard_tool(tracer=tracer, guard=guard, name="transfer_to_triage")
    def to_triage(note: str) -> str:
        return f"handed off ({MARKER})"

    def agent(name: str, body: Any) -> None:
        try:
            with agent_run(name, conversation_id=None, tracer=tracer, guard=guard):
                for turn in range(8):
                    guard.observe_llm_response(
                        model="m",
                        finish_reason="tool_calls",
                        input_tokens=100,
                        output_tokens=10,
                        requested_tool_calls=[("search", {"query": f"{MARKER} requested"})],
                    )
                    body(turn)
        except LoopGuardInterrupt:
            pass

    with caplog.at_level(logging.DEBUG):
        agent("searcher", lambda turn: search(f"pricing {MARKER}"))
        agent("sheller", lambda turn: bash(f"python -c 'import {MARKER}_mod' # {turn}"))
        agent("reader", lambda turn: read_file(f"/srv/{MARKER}/{turn}.txt"))
        agent(
            "handoffs",
            lambda turn: (to_billing if turn % 2 else to_triage)(f"{MARKER} please take it"),
        )
        # another instrumentation's spans, which recorded arguments themselves
        with foreign_agent_span(tracer, "foreign"):
            for _ in range(5):
                with foreign_tool_span(
                    tracer,
                    "foreign_search",
                    arguments=json.dumps({"q": FOREIGN}),
                    result=f"no results {FOREIGN}",
                ):
                    pass
        provider.force_flush()
        meter_provider.force_flush()
    provider.shutdown()
    spans = list(memory.get_finished_spans())
    assert any(e.attributes.get("loopguard.action") == "stop" for s in spans for e in s.events), (
        "the agents did not loop: the test would prove nothing"
    )
    return Outputs(
        otlp_bytes=b"".join(receiver.bodies),
        spans=spans,
        prometheus=generate_latest(registry).decode(),
        metrics_json=memory_reader.get_metrics_data().to_json(),
        logs="\n".join(
            f"{r.name} {r.getMessage()} {r.exc_text or ''} {r.stack_info or ''}"
            for r in caplog.records
        ),
        decisions=decisions,
        run_states=run_states,
    )


def _span_texts(spans: list[Any], skip_foreign_content: bool) -> list[str]:
    texts = []
    for span in spans:
        for key, value in span.attributes.items():
            if (
                skip_foreign_content
                and span.name == "execute_tool foreign_search"
                and key in ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result")
            ):
                continue
            texts.append(f"{span.name} {key}={value}")
        texts.append(f"{span.name} status={span.status.description}")
        for event in span.events:
            texts.append(f"{span.name} event {event.name} {dict(event.attributes)}")
    return texts


def test_no_argument_or_result_text_leaves_the_process(
    receiver: OTLPReceiver, caplog: pytest.LogCaptureFixture
) -> None:
    out = _run_agents(receiver, capture=False, caplog=caplog)
    assert out.otlp_bytes, "nothing reached the OTLP receiver"
    places = {
        "OTLP export": out.otlp_bytes.decode("latin-1"),
        "spans": "\n".join(_span_texts(out.spans, skip_foreign_content=True)),
        "Prometheus": out.prometheus,
        "metrics": out.metrics_json,
        "logs": out.logs,
        "decisions": "\n".join(out.decisions),
        "exported run state": "\n".join(out.run_states),
    }
    assert out.decisions and out.run_states and "loopguard_decisions_total" in out.prometheus
    for place, text in places.items():
        assert MARKER not in text, f"tool content leaked into {place}"
        if place != "OTLP export":  # the foreign spans' own attributes are exported as made
            assert FOREIGN not in text, f"recorded content was copied into {place}"


def test_with_content_capture_the_marker_is_exported(
    receiver: OTLPReceiver, caplog: pytest.LogCaptureFixture
) -> None:
    """The other side: the same run with capture on exports the content, so the check bites."""
    out = _run_agents(receiver, capture=True, caplog=caplog)
    assert MARKER.encode() in out.otlp_bytes
    assert any(MARKER in text for text in _span_texts(out.spans, skip_foreign_content=True))
