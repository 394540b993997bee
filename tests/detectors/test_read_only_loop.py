"""Read-only loop: consecutive steps that only read, nudged at the threshold."""

from __future__ import annotations

import json

import pytest
from sdk_stack import AGENT, sdk_stack, tool_span

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Action
from otel_loopguard.engine.detectors import DEFAULT_DETECTORS
from otel_loopguard.engine.detectors.base import RunCounters
from otel_loopguard.engine.detectors.read_only_loop import ReadOnlyLoopDetector
from otel_loopguard.engine.detectors.tool_names import ToolNameMatcher
from otel_loopguard.engine.events import Event, EventKind, tool_call, tool_result
from otel_loopguard.engine.monitor import Monitor

RUN = "run-1"


def _step(*tools: str, index: int = 0) -> list[Event]:
    """One model turn and the tool calls (and results) it asked for."""
    events = [
        Event(EventKind.LLM_RESPONSE, RUN, model="m", finish_reason="tool_calls"),
    ]
    for n, tool in enumerate(tools):
        events.append(tool_call(RUN, tool, {"path": f"src/file_{index}_{n}.py"}))
        events.append(tool_result(RUN, tool, f"line {index} {n}"))
    return events


def _fired_at(detector: ReadOnlyLoopDetector, state: object, steps: list[list[Event]]) -> list:
    """Indexes (0-based) of the steps during which the detector fired."""
    fired = []
    for index, step in enumerate(steps):
        for event in step:
            signal = detector.observe(event, state, RunCounters())
            if signal is not None:
                fired.append(index)
    return fired


def test_registered_under_its_module_name() -> None:
    assert "read_only_loop" in [f(LoopGuardConfig()).name for f in DEFAULT_DETECTORS]


def test_fires_when_the_turn_after_the_eighth_read_only_step_arrives() -> None:
    detector = ReadOnlyLoopDetector(LoopGuardConfig())
    state = detector.new_state()
    steps = [_step("read_file" if i % 2 else "grep", index=i) for i in range(8)]
    assert _fired_at(detector, state, steps) == []
    next_turn = Event(EventKind.LLM_RESPONSE, RUN, finish_reason="tool_calls")
    signal = detector.observe(next_turn, state, RunCounters())
    assert signal is not None and signal.kind == "read_only_loop"
    assert signal.evidence["steps"] == 8 and 0 <= signal.score <= 1
    assert signal.recommendation and "8 steps" in signal.recommendation
    assert "Act on what you found" in signal.recommendation


def test_seven_steps_are_not_a_loop() -> None:
    detector = ReadOnlyLoopDetector(LoopGuardConfig())
    steps = [_step("read_file", index=i) for i in range(7)] + [_step("grep", index=99)]
    assert _fired_at(detector, detector.new_state(), steps[:8]) == []


def test_several_reads_in_one_step_count_as_one_step() -> None:
    detector = ReadOnlyLoopDetector(LoopGuardConfig())
    steps = [_step("read_file", "grep", "list_directory", index=i) for i in range(10)]
    assert _fired_at(detector, detector.new_state(), steps) == [8]


def test_an_edit_resets_the_count() -> None:
    detector = ReadOnlyLoopDetector(LoopGuardConfig())
    steps = [_step("read_file", index=i) for i in range(5)]
    steps.append(_step("write_file", index=5))
    steps += [_step("read_file", index=i) for i in range(6, 16)]
    assert _fired_at(detector, detector.new_state(), steps) == [14]


def test_a_step_that_also_writes_is_not_read_only() -> None:
    detector = ReadOnlyLoopDetector(LoopGuardConfig())
    steps = [_step("read_file", index=i) for i in range(7)]
    steps.append(_step("read_file", "edit_file", index=7))  # parallel read and write
    steps += [_step("grep", index=i) for i in range(8, 16)]
    assert _fired_at(detector, detector.new_state(), steps) == []


def test_an_answer_resets_the_count_and_needs_no_nudge() -> None:
    detector = ReadOnlyLoopDetector(LoopGuardConfig())
    answer = [Event(EventKind.LLM_RESPONSE, RUN, finish_reason="stop", requested_tool_calls=())]
    steps = [_step("read_file", index=i) for i in range(6)] + [answer]
    steps += [_step("read_file", index=i) for i in range(6, 13)]
    assert _fired_at(detector, detector.new_state(), steps) == []
    # the answer comes right after the 8th read-only step: it acted, nothing to nudge
    steps = [_step("read_file", index=i) for i in range(8)] + [answer]
    assert _fired_at(detector, detector.new_state(), steps) == []
    # spans give no empty tuple: a turn that ends by itself ("end_turn") is an answer too
    spoken = [Event(EventKind.LLM_RESPONSE, RUN, finish_reason="end_turn")]
    steps = [_step("read_file", index=i) for i in range(8)] + [spoken]
    assert _fired_at(detector, detector.new_state(), steps) == []
    # a turn without tool calls resets also when the adapter does not know the requested calls
    silent = [Event(EventKind.LLM_RESPONSE, RUN)]
    steps = [_step("read_file", index=i) for i in range(6)] + [silent]
    steps += [_step("read_file", index=i) for i in range(6, 13)]
    assert _fired_at(detector, detector.new_state(), steps) == []


def test_without_model_spans_each_tool_call_is_a_step() -> None:
    detector = ReadOnlyLoopDetector(LoopGuardConfig(read_only_loop_threshold=3))
    state = detector.new_state()
    calls = [tool_call(RUN, "grep", {"pattern": f"p{i}"}) for i in range(3)]
    signals = [detector.observe(call, state, RunCounters()) for call in calls]
    assert signals[:2] == [None, None] and signals[2] is not None


def test_keeps_nudging_at_each_multiple_with_a_rising_score() -> None:
    detector = ReadOnlyLoopDetector(LoopGuardConfig(read_only_loop_threshold=3))
    state = detector.new_state()
    signals = []
    for i in range(10):
        for event in _step("read_file", index=i):
            signal = detector.observe(event, state, RunCounters())
            if signal:
                signals.append(signal)
    assert [s.evidence["steps"] for s in signals] == [3, 6, 9]
    assert signals[0].score < signals[1].score <= 1.0


@pytest.mark.parametrize(
    "name",
    [
        "read_file",
        "READ_FILE",
        "fs.read_file",
        "filesystem__read_file",
        "mcp:fs:read_file",
        "ReadFile",
        "read-file",
        "server/read_file",
    ],
)
def test_mcp_and_framework_spellings_match(name: str) -> None:
    assert ToolNameMatcher(["read_file"])[name] is True


@pytest.mark.parametrize("name", ["read_file_and_delete", "write_file", "", "reader", None])
def test_other_names_do_not_match(name: str | None) -> None:
    assert ToolNameMatcher(["read_file"])[name] is False


def test_remembered_names_stay_bounded() -> None:
    matcher = ToolNameMatcher(["read_file"])
    for n in range(5000):
        assert matcher[f"server{n}.read_file"] is True
    assert len(matcher) <= 1024


def test_read_only_tools_from_config() -> None:
    config = LoopGuardConfig.from_env(
        {"OTEL_LOOPGUARD_READ_ONLY_TOOLS": "lookup", "OTEL_LOOPGUARD_READ_ONLY_LOOP_THRESHOLD": "2"}
    )
    detector = ReadOnlyLoopDetector(config)
    steps = [_step("lookup", index=i) for i in range(3)]
    assert _fired_at(detector, detector.new_state(), steps) == [2]
    # read_file is no longer in the list: it is not read-only any more
    steps = [_step("read_file", index=i) for i in range(4)]
    assert _fired_at(detector, detector.new_state(), steps) == []


def test_export_restore_mid_run() -> None:
    detector = ReadOnlyLoopDetector(LoopGuardConfig())
    state = detector.new_state()
    _fired_at(detector, state, [_step("read_file", index=i) for i in range(7)])
    restored = detector.restore_state(json.loads(json.dumps(detector.export_state(state))))
    steps = [_step("read_file", index=7), _step("read_file", index=8)]
    assert _fired_at(detector, restored, steps) == [1]


def test_monitor_replans_with_the_nudge() -> None:
    monitor = Monitor(LoopGuardConfig())
    steps = [_step("read_file", "grep", index=i) for i in range(9)]
    decisions = [monitor.observe(event) for step in steps for event in step]
    replans = [d for d in decisions if d.action is Action.REPLAN]
    assert len(replans) == 1 and replans[0].detectors == ("read_only_loop",)
    assert replans[0].recommendation and "Act on what you found" in replans[0].recommendation
    assert all(d.action in (Action.CONTINUE, Action.REPLAN) for d in decisions)


def test_genai_tool_spans_that_only_read_get_the_nudge_as_a_span_event() -> None:
    """Real SDK spans (tool spans only, no model spans: each call is a step)."""
    stack = sdk_stack(read_only_loop_threshold=4)
    with stack.tracer.start_as_current_span("invoke_agent writer", attributes=AGENT):
        for i in range(4):
            tool_span(stack, "filesystem__read_file", json.dumps({"path": f"f{i}.py"}), f"x{i}")
    stack.provider.shutdown()
    (decision,) = stack.decisions()
    assert decision["loopguard.action"] == "replan"
    assert "Act on what you found" in decision["loopguard.recommendation"]
