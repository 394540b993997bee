"""Premature end: an empty end-of-turn right after failing tools, re-prompted up to a limit."""

from __future__ import annotations

import json

import pytest
from scripted_runs import RUN, call, error, result
from sdk_stack import AGENT, chat_span, sdk_stack, tool_span

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Action
from otel_loopguard.engine.detectors import DEFAULT_DETECTORS
from otel_loopguard.engine.detectors.base import RunCounters
from otel_loopguard.engine.detectors.premature_end import PrematureEndDetector
from otel_loopguard.engine.events import Event, EventKind
from otel_loopguard.engine.monitor import Monitor

SECRET = "token=sk-do-not-export-4242"


def _turn(*, empty: bool = False, finish: str | None = "stop", tools: tuple = ()) -> Event:
    return Event(
        EventKind.LLM_RESPONSE,
        RUN,
        model="m",
        finish_reason=finish,
        empty=empty,
        requested_tool_calls=tools,
    )


def _failing_fetch() -> list[Event]:
    return [
        _turn(finish="tool_calls", tools=("fetch",)),
        call("fetch", {"url": "https://example.invalid/x"}),
        error("fetch", f"404 for {SECRET}", status=404, type="HTTPError"),
    ]


def _successful_read() -> list[Event]:
    return [
        _turn(finish="tool_calls", tools=("read_file",)),
        call("read_file", {"path": "a.txt"}),
        result("read_file", "contents"),
    ]


def _signals(detector: PrematureEndDetector, state: object, events: list[Event]) -> list:
    return [s for s in (detector.observe(e, state, RunCounters()) for e in events) if s]


def test_registered_under_its_module_name() -> None:
    assert "premature_end" in [f(LoopGuardConfig()).name for f in DEFAULT_DETECTORS]


def test_empty_end_after_a_failing_tool_is_a_recovery_with_a_prompt() -> None:
    detector = PrematureEndDetector(LoopGuardConfig())
    signals = _signals(detector, detector.new_state(), [*_failing_fetch(), _turn(empty=True)])
    assert len(signals) == 1
    signal = signals[0]
    assert signal.kind == "recovery" and signal.detector == "premature_end"
    assert signal.recommendation is not None
    assert "without completing the task" in signal.recommendation
    assert "fetch: HTTPError" in signal.recommendation
    assert SECRET not in repr(signal)  # the error message is raw content


def test_recoveries_run_out_then_exhausted() -> None:
    detector = PrematureEndDetector(LoopGuardConfig())
    state = detector.new_state()
    kinds = []
    for _ in range(3):
        kinds += [s.kind for s in _signals(detector, state, [*_failing_fetch(), _turn(empty=True)])]
    assert kinds == ["recovery", "recovery", "exhausted"]
    # re-prompted with no new tool call: the same failed batch is still the last one
    state = detector.new_state()
    events = [*_failing_fetch(), _turn(empty=True), _turn(empty=True), _turn(empty=True)]
    assert [s.kind for s in _signals(detector, state, events)] == [
        "recovery",
        "recovery",
        "exhausted",
    ]


def test_empty_end_after_successful_tools_is_not_premature() -> None:
    detector = PrematureEndDetector(LoopGuardConfig())
    events = [*_successful_read(), _turn(empty=True)]
    assert _signals(detector, detector.new_state(), events) == []


def test_retry_then_success_is_not_premature() -> None:
    detector = PrematureEndDetector(LoopGuardConfig())
    events = [*_failing_fetch(), *_successful_read(), _turn(empty=True)]
    assert _signals(detector, detector.new_state(), events) == []


def test_not_an_end_turn_is_not_premature() -> None:
    detector = PrematureEndDetector(LoopGuardConfig())
    state = detector.new_state()
    events = [
        *_failing_fetch(),
        _turn(empty=True, finish="length"),  # truncation's business
        _turn(empty=True, finish="tool_calls", tools=("fetch",)),  # asked for a tool
        _turn(empty=False),  # answered: explained itself
    ]
    assert _signals(detector, state, events) == []


@pytest.mark.parametrize("finish", ["stop", "STOP", "end_turn", "stop_sequence", "tool_calls,stop"])
def test_provider_spellings_of_an_end_turn(finish: str) -> None:
    detector = PrematureEndDetector(LoopGuardConfig())
    events = [*_failing_fetch(), _turn(empty=True, finish=finish)]
    assert [s.kind for s in _signals(detector, detector.new_state(), events)] == ["recovery"]


@pytest.mark.parametrize("finish", ["tool_use", "content_filter", "MAX_TOKENS", "error"])
def test_other_finishes_are_not_an_end_turn(finish: str) -> None:
    detector = PrematureEndDetector(LoopGuardConfig())
    events = [*_failing_fetch(), _turn(empty=True, finish=finish)]
    assert _signals(detector, detector.new_state(), events) == []


def test_unknown_finish_reason_counts_as_an_end() -> None:
    detector = PrematureEndDetector(LoopGuardConfig())
    events = [*_failing_fetch(), _turn(empty=True, finish=None)]
    assert [s.kind for s in _signals(detector, detector.new_state(), events)] == ["recovery"]


def test_progress_resets_the_count() -> None:
    detector = PrematureEndDetector(LoopGuardConfig(max_premature_end_recoveries=1))
    state = detector.new_state()
    first = _signals(detector, state, [*_failing_fetch(), _turn(empty=True)])
    # a successful batch in between: the next premature end starts counting again
    second = _signals(detector, state, [*_successful_read(), *_failing_fetch(), _turn(empty=True)])
    # a non-empty answer in between resets too
    third = _signals(detector, state, [_turn(), *_failing_fetch(), _turn(empty=True)])
    fourth = _signals(detector, state, [*_failing_fetch(), _turn(empty=True)])
    assert [s.kind for s in first + second + third + fourth] == [
        "recovery",
        "recovery",
        "recovery",
        "exhausted",
    ]


def test_shell_result_showing_a_failure_counts_as_failed() -> None:
    detector = PrematureEndDetector(LoopGuardConfig())
    events = [
        _turn(finish="tool_calls", tools=("bash",)),
        call("bash", {"command": "python app.py"}),
        result(
            "bash",
            'Traceback (most recent call last):\nModuleNotFoundError: No module named "yaml"',
        ),
        _turn(empty=True, finish="end_turn"),
    ]
    signals = _signals(detector, detector.new_state(), events)
    assert len(signals) == 1 and "bash: ModuleNotFoundError" in signals[0].message


def test_threshold_from_config() -> None:
    detector = PrematureEndDetector(LoopGuardConfig(max_premature_end_recoveries=0))
    events = [*_failing_fetch(), _turn(empty=True)]
    assert [s.kind for s in _signals(detector, detector.new_state(), events)] == ["exhausted"]


def test_export_restore_mid_run() -> None:
    detector = PrematureEndDetector(LoopGuardConfig())
    state = detector.new_state()
    _signals(detector, state, [*_failing_fetch(), _turn(empty=True), _turn(empty=True)])
    data = json.loads(json.dumps(detector.export_state(state)))
    assert SECRET not in json.dumps(data)
    restored = detector.restore_state(data)
    assert [s.kind for s in _signals(detector, restored, [_turn(empty=True)])] == ["exhausted"]


def test_failures_kept_are_bounded() -> None:
    detector = PrematureEndDetector(LoopGuardConfig())
    state = detector.new_state()
    events = [_turn(finish="tool_calls")]
    events += [error(f"tool{i}", type="ValueError") for i in range(1000)]
    _signals(detector, state, events)
    assert len(state.batch_failures) <= 4 and state.batch_tools == 1000


def test_monitor_replans_with_the_prompt_and_leaves_successful_runs_alone() -> None:
    monitor = Monitor(LoopGuardConfig())
    decisions = [monitor.observe(e) for e in [*_failing_fetch(), _turn(empty=True)]]
    replan = decisions[-1]
    assert replan.action is Action.REPLAN and replan.detectors == ("premature_end",)
    assert replan.recommendation and "without completing the task" in replan.recommendation
    quiet = Monitor(LoopGuardConfig())
    events = [*_successful_read(), _turn(empty=True)]
    assert {quiet.observe(e).action for e in events} == {Action.CONTINUE}


def test_genai_spans_an_empty_turn_after_a_failed_tool_gets_the_prompt_as_a_span_event() -> None:
    """Real SDK spans in the GenAI semantic conventions, fed through the span processor."""
    stack = sdk_stack()
    nothing = json.dumps([{"role": "assistant", "parts": []}])
    with stack.tracer.start_as_current_span("invoke_agent writer", attributes=AGENT):
        chat_span(stack, "tool_calls")
        tool_span(stack, "fetch", '{"url": "https://x.invalid"}', "404", error_type="HTTPError")
        chat_span(stack, "stop", output_messages=nothing)
    stack.provider.shutdown()
    decisions = [d for d in stack.decisions() if "premature_end" in d["loopguard.detectors"]]
    assert [d["loopguard.action"] for d in decisions] == ["replan"]
    assert "without completing the task" in decisions[0]["loopguard.recommendation"]
    assert "fetch: HTTPError" in decisions[0]["loopguard.recommendation"]


def test_genai_spans_an_empty_turn_after_tools_that_worked_is_quiet() -> None:
    stack = sdk_stack()
    nothing = json.dumps([{"role": "assistant", "parts": []}])
    with stack.tracer.start_as_current_span("invoke_agent writer", attributes=AGENT):
        chat_span(stack, "tool_calls")
        tool_span(stack, "fetch", '{"url": "https://x.invalid"}', "<html>ok</html>")
        chat_span(stack, "stop", output_messages=nothing)
    stack.provider.shutdown()
    assert stack.decisions() == []
