"""Replay of exported spans reaches the same decisions, for the same runs and spans, as the
on-line ``LoopGuardSpanProcessor`` reached while the agents ran."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otel.helpers import in_process_server_span

from otel_loopguard.analyze.readers import read_spans
from otel_loopguard.analyze.replay import Replayer, RunRecord
from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.monitor import Monitor
from otel_loopguard.guard import LoopGuard
from otel_loopguard.processor import LoopGuardSpanProcessor

from . import replay_policies
from .traces import batches, jaeger_export, jsonl_text

POLICY = replay_policies.warn_on_turns_stop_at_third_call


def _tool(tracer, name: str, arguments: dict, result: str = "r") -> None:
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.arguments": json.dumps(arguments),
        "gen_ai.tool.call.result": result,
    }
    with tracer.start_as_current_span(f"execute_tool {name}", attributes=attributes):
        pass


def _chat(tracer, **extra) -> None:
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "m",
        "gen_ai.usage.input_tokens": 5,
        **extra,
    }
    with tracer.start_as_current_span("chat m", attributes=attributes):
        pass


def _agent(tracer, name: str, **extra):
    attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name, **extra}
    return tracer.start_as_current_span(f"invoke_agent {name}", attributes=attributes)


def _workload(tracer) -> None:
    # a root agent with a nested sub-agent: one run, keyed by the outer agent
    with _agent(tracer, "planner"):
        _chat(tracer)
        _tool(tracer, "search", {"q": 1})
        with _agent(tracer, "researcher"):
            for n in range(3):
                _chat(tracer)
                _tool(tracer, "fetch", {"n": n})
    # a conversation over two traces; the id is only on a model span inside the agent
    for part in range(2):
        with _agent(tracer, "support"):
            _chat(tracer, **{"gen_ai.conversation.id": "conv-1"})
            _tool(tracer, "lookup", {"part": part})
            _tool(tracer, "lookup", {"part": part, "again": True})
    # no agent span at all: keyed by the trace
    with tracer.start_as_current_span("http request"):
        for n in range(4):
            _tool(tracer, "ping", {"n": n})
    # a framework tool span around an MCP client span: counted once
    with _agent(tracer, "mcp-user"):
        for n in range(3):
            with tracer.start_as_current_span(
                "execute_tool wrapper",
                attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "w"},
            ):
                _tool(tracer, "inner", {"n": n})
    # a tool span with its arguments around an MCP client library's span and the SDK's
    # ``MCP send`` span: the tool span is fed (the repeated call is seen), the others not
    with _agent(tracer, "mcp-client"):
        for _ in range(4):
            with (
                tracer.start_as_current_span(
                    "execute_tool kb",
                    attributes={
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": "kb",
                        "gen_ai.tool.call.arguments": json.dumps({"q": "same"}),
                        "gen_ai.tool.call.result": "none",
                    },
                ),
                tracer.start_as_current_span(
                    "tools/call kb",
                    attributes={"mcp.method.name": "tools/call", "gen_ai.tool.name": "kb"},
                ),
                tracer.start_as_current_span(
                    "MCP send tools/call kb", attributes={"mcp.method.name": "tools/call"}
                ) as send,
            ):
                # an in-process server's span, parented on the request's propagated context
                in_process_server_span(
                    tracer,
                    send,
                    "tools/call kb",
                    {"mcp.method.name": "tools/call", "gen_ai.tool.name": "kb"},
                )


def _online() -> tuple[list[tuple], list]:
    config = LoopGuardConfig()
    monitor = Monitor(config, policy=POLICY)
    decisions: list[tuple] = []
    monitor.add_decision_listener(
        lambda d, e: decisions.append((d.run_id, d.action.value, e.span_id, e.kind.value))
    )
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    guard = LoopGuard(config, monitor=monitor, tracer_provider=provider)
    provider.add_span_processor(LoopGuardSpanProcessor(guard, tracer_provider=provider))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _workload(provider.get_tracer("app"))
    return decisions, list(exporter.get_finished_spans())


def _replayed(path: Path) -> list[tuple]:
    runs: list[RunRecord] = []
    replayer = Replayer(LoopGuardConfig(), runs.append, policy=POLICY)
    replayer.feed(read_spans([str(path)]))
    replayer.finish()
    return [
        (run.run_id, d.action.value, d.span_id, d.event_kind) for run in runs for d in run.decisions
    ]


@pytest.mark.parametrize("fmt", ["jsonl", "jaeger"])
def test_replay_reaches_the_processors_decisions(tmp_path: Path, fmt: str) -> None:
    online, spans = _online()
    assert any(name == "loopguard.decision" for name in (s.name for s in spans))
    path = tmp_path / f"export.{fmt}"
    if fmt == "jsonl":
        path.write_text(jsonl_text(batches(spans, 5)))
    else:
        path.write_text(json.dumps(jaeger_export(spans)))
    replayed = _replayed(path)
    assert online  # the workload does make decisions
    assert {d[1] for d in online} == {"warn", "stop"}
    assert {d[0] for d in online} >= {"conv-1"}

    assert sorted(replayed) == sorted(online)
