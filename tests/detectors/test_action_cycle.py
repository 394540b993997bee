"""Action cycle: A→B→A→B (and longer periods) with unchanged results fire; iteration does not."""

from __future__ import annotations

from scripted_runs import Driver, edit_then_test, exchange, failing

from otel_loopguard.engine.detectors.action_cycle import ActionCycleDetector


def _steps(pattern: str, rounds: int) -> list:
    events = []
    for _ in range(rounds):
        for letter in pattern:
            events += exchange(f"tool_{letter}", {"arg": letter}, f"result {letter}")
    return events


def test_period_two_fires_after_two_full_periods() -> None:
    run = Driver(ActionCycleDetector)
    assert run.feed(_steps("ab", 1) + _steps("a", 1)) == []
    (signal,) = run.feed(_steps("b", 1))
    assert (signal.detector, signal.kind) == ("action_cycle", "action_cycle")
    assert signal.evidence["period"] == 2 and signal.evidence["periods"] == 2
    assert signal.message.startswith("cycle of 2 calls (tool_a → tool_b) repeated 2 times")


def test_period_three_fires_and_keeps_firing_each_full_period_with_growing_score() -> None:
    run = Driver(ActionCycleDetector)
    signals = run.feed(_steps("abc", 4))
    assert [s.evidence["periods"] for s in signals] == [2, 3, 4]
    assert all(s.evidence["period"] == 3 for s in signals)
    assert signals[0].score < signals[1].score < signals[2].score


def test_longest_period_and_min_periods_come_from_config() -> None:
    assert Driver(ActionCycleDetector, cycle_max_period=4).feed(_steps("abcde", 3)) == []
    assert Driver(ActionCycleDetector, cycle_max_period=5).feed(_steps("abcde", 2))
    strict = Driver(ActionCycleDetector, cycle_min_periods=3)
    assert strict.feed(_steps("ab", 2)) == []
    assert strict.feed(_steps("ab", 1))


def test_period_one_is_left_to_repetition() -> None:
    assert Driver(ActionCycleDetector).feed(_steps("a", 20)) == []


def test_period_two_is_not_reported_again_as_period_four() -> None:
    signals = Driver(ActionCycleDetector).feed(_steps("ab", 8))
    assert {s.evidence["period"] for s in signals} == {2}


def test_polling_cycle_with_changing_output_does_not_fire() -> None:
    run = Driver(ActionCycleDetector)
    events = []
    for pct in range(0, 100, 10):
        events += exchange("status", {"job": 7}, f"{pct}% done")
        events += exchange("sleep", {"seconds": 5}, "slept")
    assert run.feed(events) == []


def test_edit_then_test_with_different_edits_does_not_fire() -> None:
    run = Driver(ActionCycleDetector)
    assert run.feed(edit_then_test([f"attempt {i}" for i in range(10)], "1 failed")) == []


def test_failing_steps_form_cycles_too() -> None:
    run = Driver(ActionCycleDetector)
    events = []
    for _ in range(2):
        events += failing("fetch", {"url": "/x"}, "404 not found")
        events += exchange("search", {"q": "x url"}, "/x")
    assert len(run.feed(events)) == 1


def test_export_restore_mid_cycle_continues() -> None:
    run = Driver(ActionCycleDetector)
    run.feed(_steps("abc", 1) + _steps("ab", 1))
    run.reload()
    (signal,) = run.feed(_steps("c", 1))
    assert signal.evidence["periods"] == 2


def test_state_stays_bounded_after_100k_distinct_steps() -> None:
    run = Driver(ActionCycleDetector)
    events = (e for i in range(50_000) for e in exchange("search", {"q": i}, f"r{i}"))
    assert run.feed(events) == []
    assert len(run.state.steps) <= 4 and len(run.pending.by_tool) <= 64
