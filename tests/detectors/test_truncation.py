"""Truncation: continuation prompts up to the recovery limit, then the truncated answer is
taken as the end of the turn (a warn): truncation alone never stops a run (issue 18,
point 7), unless ``truncation_stops`` asks for it."""

from __future__ import annotations

import json

import pytest
from sdk_stack import AGENT, chat_span, sdk_stack

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Action, RunEndState
from otel_loopguard.engine.detectors import DEFAULT_DETECTORS
from otel_loopguard.engine.detectors.base import RunCounters
from otel_loopguard.engine.detectors.truncation import (
    CONTINUATION_PROMPT,
    TruncationDetector,
    is_truncation,
)
from otel_loopguard.engine.events import Event, EventKind, tool_call, tool_result
from otel_loopguard.engine.monitor import Monitor


def _response(finish_reason: str | None) -> Event:
    return Event(
        EventKind.LLM_RESPONSE, "run-1", model="m", finish_reason=finish_reason, output_tokens=4096
    )


def _kinds(detector: TruncationDetector, state: object, events: list[Event]) -> list:
    signals = [detector.observe(e, state, RunCounters()) for e in events]
    return [s.kind if s else None for s in signals]


def test_registered_under_its_module_name() -> None:
    assert "truncation" in [f(LoopGuardConfig()).name for f in DEFAULT_DETECTORS]


@pytest.mark.parametrize(
    "reason",
    ["length", "max_tokens", "MAX_TOKENS", "max_output_tokens", " Length ", "stop,length"],
)
def test_provider_spellings_of_max_tokens(reason: str) -> None:
    assert is_truncation(reason)


@pytest.mark.parametrize("reason", [None, "", "stop", "end_turn", "tool_calls", "content_filter"])
def test_other_finishes_are_not_truncations(reason: str | None) -> None:
    detector = TruncationDetector(LoopGuardConfig())
    assert _kinds(detector, detector.new_state(), [_response(reason)] * 4) == [None] * 4


def test_two_continuations_then_the_answer_is_taken_as_the_end_of_the_turn() -> None:
    detector = TruncationDetector(LoopGuardConfig())
    state = detector.new_state()
    signals = [detector.observe(_response("length"), state, RunCounters()) for _ in range(4)]
    first, second, third, fourth = signals
    assert first and second and third and fourth
    assert [s.kind for s in signals] == ["recovery", "recovery", "ended", "ended"]
    assert first.recommendation and "cut off" in first.recommendation
    assert "Continue exactly where you stopped" in first.recommendation
    assert "recovery 2 of 2" in second.message
    assert third.recommendation is None and "end of the turn" in third.message
    assert third.evidence["truncations"] == 3 and third.evidence["output_tokens"] == 4096


def test_with_truncation_stops_the_third_is_exhausted() -> None:
    detector = TruncationDetector(LoopGuardConfig(truncation_stops=True))
    state = detector.new_state()
    signals = [detector.observe(_response("length"), state, RunCounters()) for _ in range(3)]
    assert [s.kind for s in signals if s] == ["recovery", "recovery", "exhausted"]
    assert signals[2] and signals[2].score > signals[1].score


def test_normal_finish_resets_the_consecutive_count() -> None:
    detector = TruncationDetector(LoopGuardConfig())
    state = detector.new_state()
    events = [_response("length"), _response("length"), _response("stop"), _response("length")]
    assert _kinds(detector, state, events) == ["recovery", "recovery", None, "recovery"]


def test_tool_events_between_truncations_do_not_reset() -> None:
    detector = TruncationDetector(LoopGuardConfig())
    state = detector.new_state()
    events = [
        _response("length"),
        tool_call("run-1", "write_file", {"path": "a.py"}),
        tool_result("run-1", "write_file", "ok"),
        _response("max_tokens"),
        _response("MAX_TOKENS"),
    ]
    assert _kinds(detector, state, events) == ["recovery", None, None, "recovery", "ended"]


def test_threshold_from_config() -> None:
    detector = TruncationDetector(LoopGuardConfig(max_tokens_recoveries=0))
    assert _kinds(detector, detector.new_state(), [_response("length")]) == ["ended"]
    detector = TruncationDetector(LoopGuardConfig(max_tokens_recoveries=4))
    kinds = _kinds(detector, detector.new_state(), [_response("length")] * 5)
    assert kinds == ["recovery"] * 4 + ["ended"]


def test_export_restore_mid_run() -> None:
    detector = TruncationDetector(LoopGuardConfig())
    state = detector.new_state()
    _kinds(detector, state, [_response("length")] * 2)
    restored = detector.restore_state(json.loads(json.dumps(detector.export_state(state))))
    assert _kinds(detector, restored, [_response("length")]) == ["ended"]
    assert detector.restore_state({"consecutive": "two"}).consecutive == 0


def test_monitor_replans_with_the_continuation_prompt_then_warns_and_never_stops() -> None:
    monitor = Monitor(LoopGuardConfig())
    decisions = [monitor.observe(_response("length")) for _ in range(6)]
    assert [d.action for d in decisions] == [Action.REPLAN] * 2 + [Action.WARN] * 4
    assert decisions[0].recommendation == CONTINUATION_PROMPT
    assert decisions[2].detectors == ("truncation",)
    assert not monitor.run_snapshot("run-1").stopped


def test_monitor_truncation_still_ends_a_run_over_its_budget() -> None:
    """Budget and other evidence still stop a run that keeps running into the limit."""
    monitor = Monitor(LoopGuardConfig(token_budget=10_000))
    decisions = [monitor.observe(_response("length")) for _ in range(3)]
    assert decisions[-1].action is Action.STOP
    assert decisions[-1].end_state is RunEndState.BUDGET_EXCEEDED


def test_monitor_with_truncation_stops_stops_after_the_continuations() -> None:
    monitor = Monitor(LoopGuardConfig(truncation_stops=True))
    decisions = [monitor.observe(_response("length")) for _ in range(3)]
    assert [d.action for d in decisions] == [Action.REPLAN, Action.REPLAN, Action.STOP]
    assert decisions[2].end_state is RunEndState.STOPPED


def test_truncated_genai_chat_spans_get_the_continuation_prompt_as_a_span_event() -> None:
    """Real SDK spans in the GenAI semantic conventions, fed through the span processor."""
    stack = sdk_stack()
    with stack.tracer.start_as_current_span("invoke_agent writer", attributes=AGENT):
        for finish in ("length", "length", "stop", "max_tokens", "max_tokens", "max_tokens"):
            chat_span(stack, finish, output_tokens=4096)
    stack.provider.shutdown()
    decisions = stack.decisions()
    # two continuations; the normal finish (stop) resets the count; two more, then the
    # truncated answer is taken as the end of the turn: a warn, and the run completes
    assert [d["loopguard.action"] for d in decisions] == ["replan"] * 4 + ["warn"]
    assert decisions[0]["loopguard.recommendation"] == CONTINUATION_PROMPT
    assert decisions[-1]["loopguard.detectors"] == ("truncation",)
    (run,) = stack.spans("loopguard.run")
    assert run.attributes["loopguard.run.state"] == "completed"
