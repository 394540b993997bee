"""Budget proximity: warn once when the headroom drops to the reserve."""

from __future__ import annotations

import json

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Action
from otel_loopguard.engine.detectors import DEFAULT_DETECTORS
from otel_loopguard.engine.detectors.base import RunCounters
from otel_loopguard.engine.detectors.budget_proximity import BudgetProximityDetector
from otel_loopguard.engine.events import Event, EventKind
from otel_loopguard.engine.monitor import Monitor

LLM = Event(EventKind.LLM_RESPONSE, "run-1", model="m", finish_reason="stop")


def _kinds(detector: BudgetProximityDetector, state: object, counters: list[RunCounters]) -> list:
    signals = [detector.observe(LLM, state, c) for c in counters]
    return [s.kind if s else None for s in signals]


def test_registered_under_its_module_name() -> None:
    assert "budget_proximity" in [f(LoopGuardConfig()).name for f in DEFAULT_DETECTORS]


def test_tokens_fire_once_at_the_reserve() -> None:
    detector = BudgetProximityDetector(LoopGuardConfig(token_budget=10_000))  # reserve 512
    state = detector.new_state()
    used = [9000, 9487, 9488, 9600, 9999]
    kinds = _kinds(detector, state, [RunCounters(input_tokens=n) for n in used])
    assert kinds == [None, None, "tokens", None, None]


def test_signal_reports_headroom_and_a_score_in_range() -> None:
    detector = BudgetProximityDetector(LoopGuardConfig(token_budget=1000, reserve_tokens=100))
    signal = detector.observe(LLM, detector.new_state(), RunCounters(output_tokens=950))
    assert signal is not None and signal.detector == "budget_proximity"
    assert signal.evidence["left"] == 50 and 0.9 <= signal.score <= 1.0
    assert "50 of 1000 left" in signal.message


def test_cost_fires_once_within_the_fraction() -> None:
    detector = BudgetProximityDetector(LoopGuardConfig(cost_limit=2.0))  # reserve 10% = 0.2
    state = detector.new_state()
    costs = [0.5, 1.7, 1.85, 1.9, None, 1.99]
    kinds = _kinds(detector, state, [RunCounters(cost=c) for c in costs])
    assert kinds == [None, None, "cost", None, None, None]


def test_off_without_a_budget_or_with_a_zero_reserve() -> None:
    for config in (
        LoopGuardConfig(),
        LoopGuardConfig(token_budget=1000, reserve_tokens=0),
        LoopGuardConfig(cost_limit=1.0, reserve_cost_fraction=0),
    ):
        detector = BudgetProximityDetector(config)
        state = detector.new_state()
        near = [RunCounters(input_tokens=999, cost=0.999), RunCounters(input_tokens=1000, cost=1)]
        assert _kinds(detector, state, near) == [None, None]


def test_jumping_over_the_budget_is_left_to_the_budget_detector() -> None:
    detector = BudgetProximityDetector(LoopGuardConfig(token_budget=1000))
    state = detector.new_state()
    kinds = _kinds(detector, state, [RunCounters(input_tokens=n) for n in (100, 5000, 6000)])
    assert kinds == [None, None, None]


def test_export_restore_does_not_warn_twice_and_rearms_under_a_larger_budget() -> None:
    small = BudgetProximityDetector(LoopGuardConfig(token_budget=1000, reserve_tokens=100))
    state = small.new_state()
    assert small.observe(LLM, state, RunCounters(input_tokens=950)) is not None
    data = json.loads(json.dumps(small.export_state(state)))
    assert small.observe(LLM, small.restore_state(data), RunCounters(input_tokens=960)) is None
    # the session is reloaded with a bigger budget: far from it again, then close again
    big = BudgetProximityDetector(LoopGuardConfig(token_budget=5000, reserve_tokens=100))
    state = big.restore_state(data)
    assert _kinds(big, state, [RunCounters(input_tokens=n) for n in (960, 4950)]) == [
        None,
        "tokens",
    ]


def test_monitor_warns_once_then_the_budget_stops() -> None:
    monitor = Monitor(LoopGuardConfig(token_budget=1000, reserve_tokens=100))

    def turn(tokens: int) -> Event:
        return Event(EventKind.LLM_RESPONSE, "run-1", model="m", output_tokens=tokens)

    decisions = [monitor.observe(turn(n)) for n in (800, 100, 50, 100)]
    assert [d.action for d in decisions] == [
        Action.CONTINUE,
        Action.WARN,
        Action.CONTINUE,
        Action.STOP,
    ]
    assert decisions[1].detectors == ("budget_proximity",)
    assert decisions[3].detectors == ("budget",)
