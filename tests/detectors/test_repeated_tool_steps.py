"""Repeated tool steps: identical consecutive tool-call sets fire; other turns reset."""

from __future__ import annotations

from scripted_runs import Driver, call, llm

from otel_loopguard.engine.detectors.repeated_tool_steps import RepeatedToolStepsDetector


def test_third_identical_requested_step_fires() -> None:
    run = Driver(RepeatedToolStepsDetector)
    step = [call("search", {"q": "x"}), call("open", {"url": "/a"})]
    assert run.feed([llm(step), llm(step)]) == []
    (signal,) = run.feed([llm(list(reversed(step)))])  # the set, not the order, counts
    assert (signal.detector, signal.kind) == ("repeated_tool_steps", "repeated_tool_steps")
    assert signal.evidence["steps"] == 3 and signal.evidence["calls"] == 2


def test_a_call_requested_twice_in_a_turn_is_the_same_step() -> None:
    run = Driver(RepeatedToolStepsDetector)
    search = call("search", {"q": "x"})
    assert run.feed([llm([search]), llm([search, search]), llm([search])])


def test_threshold_from_config_and_score_grows() -> None:
    run = Driver(RepeatedToolStepsDetector, max_repeated_tool_steps=4)
    signals = run.feed([llm([call("search", {"q": "x"})])] * 6)
    assert [s.evidence["steps"] for s in signals] == [4, 5, 6]
    assert signals[0].score < signals[-1].score


def test_different_steps_or_a_turn_without_tools_reset() -> None:
    run = Driver(RepeatedToolStepsDetector)
    a, b = [call("search", {"q": "x"})], [call("search", {"q": "y"})]
    assert run.feed([llm(a), llm(a), llm(b), llm(a), llm(a), llm([]), llm(a), llm(a)]) == []


def test_edit_then_test_turns_do_not_fire() -> None:
    run = Driver(RepeatedToolStepsDetector)
    turns = []
    for i in range(10):
        turns += [
            llm([call("edit_file", {"patch": f"v{i}"})]),
            llm([call("bash", {"cmd": "pytest"})]),
        ]
    assert run.feed(turns) == []


def test_fallback_groups_tool_calls_between_model_responses() -> None:
    """Sources with tool spans but no requested calls: the calls after a response are its step."""
    run = Driver(RepeatedToolStepsDetector)
    events = [llm()]
    for _ in range(3):
        events += [call("search", {"q": "x"}), call("open", {"url": "/a"}), llm()]
    (signal,) = run.feed(events)
    assert signal.evidence["tools"] == ["open", "search"]
    assert "open, search" in signal.message


def test_fallback_turns_with_different_calls_do_not_fire() -> None:
    run = Driver(RepeatedToolStepsDetector)
    events = [llm()]
    for i in range(5):
        events += [call("read_file", {"path": f"f{i}"}), llm()]
    assert run.feed(events) == []


def test_export_restore_mid_run_continues_counts() -> None:
    run = Driver(RepeatedToolStepsDetector)
    step = [call("search", {"q": "x"})]
    run.feed([llm(step), llm(step)])
    run.reload()
    assert run.feed([llm(step)])


def test_state_stays_bounded_after_100k_distinct_calls() -> None:
    run = Driver(RepeatedToolStepsDetector)
    assert run.feed(call("search", {"q": i}) for i in range(100_000)) == []
    assert len(run.state.group) <= 64
