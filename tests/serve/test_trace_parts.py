"""A live service gets a trace in the parts its exporter batched, the agent span (which
ends last) in the last part: the run is still one run, keyed as the earlier parts were.
Requests of several traces are judged trace by trace; a sender whose clock runs days ahead
does not end another sender's conversation."""

from __future__ import annotations

import time

from otel_loopguard.analyze.replay import RunRecord
from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.serve.decode import decode_message
from otel_loopguard.serve.pipeline import Pipeline

from .requests_helpers import looping_trace


def _judge(parts: list[list]) -> tuple[list[RunRecord], list[tuple[str, str | None]]]:
    runs: list[RunRecord] = []
    decisions: list[tuple[str, str | None]] = []
    errors: list[BaseException] = []
    pipeline = Pipeline(
        LoopGuardConfig(),
        lambda record, item, decision, event, service: decisions.append(
            (decision.action.value, service)
        ),
        runs.append,
        max_pending=10_000,
        on_error=lambda where, exc: errors.append(exc),
    )
    pipeline.start()
    for part in parts:
        assert pipeline.offer(part)
    assert pipeline.drain(30)
    pipeline.replayer.finish()
    assert not errors
    return runs, decisions


def test_a_trace_in_two_parts_is_one_run() -> None:
    _, request = looping_trace(8, service="batched-agent")
    views = decode_message(request).views  # 8 tool spans, then the agent span
    runs, decisions = _judge([views[:3], views[3:]])
    assert [run.tool_calls for run in runs] == [8]
    assert runs[0].stopped
    assert ("stop", "batched-agent") in decisions


def test_a_request_of_many_traces_is_judged_trace_by_trace() -> None:
    requests = [looping_trace(5, service=f"agent-{index}")[1] for index in range(3)]
    views = [view for request in requests for view in decode_message(request).views]
    runs, decisions = _judge([views])
    assert sorted(run.tool_calls for run in runs) == [5, 5, 5]
    assert sorted(service for action, service in decisions if action == "stop") == [
        "agent-0",
        "agent-1",
        "agent-2",
    ]


def test_a_sender_with_a_clock_days_ahead_does_not_end_other_conversations() -> None:
    now = time.time_ns()
    day = 86_400 * 1_000_000_000

    def turn(service: str, start_ns: int, conversation: str) -> list:
        _, request = looping_trace(2, service=service, start_ns=start_ns, conversation=conversation)
        return decode_message(request).views

    runs, decisions = _judge(
        [
            turn("steady", now, "conv-steady"),  # two identical calls: no STOP yet
            turn("ahead", now + 10 * day, "conv-ahead"),  # a clock ten days ahead
            turn("steady", now + 1_000_000_000, "conv-steady"),  # two more: the loop
        ]
    )
    assert ("stop", "steady") in decisions
    assert sum(run.tool_calls for run in runs if run.run_id == "conv-steady") == 4
