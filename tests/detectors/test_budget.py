"""Budget detector and pre-flight: a limit of N allows N; 0 turns a limit off."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sdk_stack import AGENT, chat_span, sdk_stack

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Action, RunEndState
from otel_loopguard.engine.detectors import DEFAULT_DETECTORS
from otel_loopguard.engine.detectors.base import RunCounters
from otel_loopguard.engine.detectors.budget import BudgetDetector, budget_exceeded
from otel_loopguard.engine.events import Event, EventKind
from otel_loopguard.engine.monitor import Monitor

LLM = Event(EventKind.LLM_RESPONSE, "run-1", model="m", finish_reason="stop")


def test_registered_under_its_module_name() -> None:
    names = [factory(LoopGuardConfig()).name for factory in DEFAULT_DETECTORS]
    assert "budget" in names
    assert BudgetDetector.__module__.rsplit(".", 1)[1] == BudgetDetector.name


def test_every_limit_off_by_default() -> None:
    config = LoopGuardConfig()
    detector = BudgetDetector(config)
    state = detector.new_state()
    huge = RunCounters(
        started_at=1.0,
        now=1e9,
        steps=10**6,
        tool_calls=10**6,
        input_tokens=10**9,
        output_tokens=10**9,
        cost=1e6,
    )
    assert detector.observe(LLM, state, huge) is None
    assert budget_exceeded(huge, config, "llm_call", expected_tokens=10**6) is None
    assert budget_exceeded(huge, config, "tool_call") is None


def test_max_steps_allows_exactly_n_model_turns() -> None:
    config = LoopGuardConfig(max_steps=3)
    detector = BudgetDetector(config)
    state = detector.new_state()
    signals = [detector.observe(LLM, state, RunCounters(steps=n)) for n in range(1, 6)]
    assert signals[:3] == [None, None, None]
    fired = signals[3]
    assert fired is not None and fired.kind == "steps" and fired.score == 1.0
    assert fired.evidence["limit"] == 3 and fired.evidence["used"] == 4
    assert "OTEL_LOOPGUARD_MAX_STEPS" in fired.message
    assert signals[4] is None  # reported once per run


def test_preflight_vetoes_the_call_after_the_limit() -> None:
    config = LoopGuardConfig(max_steps=3, max_tool_calls=2)
    assert budget_exceeded(RunCounters(steps=2), config, "llm_call") is None
    veto = budget_exceeded(RunCounters(steps=3), config, "llm_call")
    assert veto is not None and veto.kind == "steps" and veto.evidence["preflight"] is True
    # a tool call does not use a model turn
    assert budget_exceeded(RunCounters(steps=3), config, "tool_call") is None
    assert budget_exceeded(RunCounters(tool_calls=1), config, "tool_call") is None
    veto = budget_exceeded(RunCounters(tool_calls=2), config, "tool_call")
    assert veto is not None and veto.kind == "tool_calls"
    assert budget_exceeded(RunCounters(tool_calls=2), config, "llm_call") is None


def test_tool_call_limit_fires_after_the_nth_call() -> None:
    detector = BudgetDetector(LoopGuardConfig(max_tool_calls=2))
    state = detector.new_state()
    call = Event(EventKind.TOOL_CALL, "run-1", tool_name="search")
    assert detector.observe(call, state, RunCounters(tool_calls=2)) is None
    fired = detector.observe(call, state, RunCounters(tool_calls=3))
    assert fired is not None and fired.kind == "tool_calls"


def test_token_budget_exactly_used_is_allowed_but_blocks_the_next_model_call() -> None:
    config = LoopGuardConfig(token_budget=1000)
    detector = BudgetDetector(config)
    state = detector.new_state()
    at_limit = RunCounters(input_tokens=600, output_tokens=400)
    assert detector.observe(LLM, state, at_limit) is None
    veto = budget_exceeded(at_limit, config, "llm_call")
    assert veto is not None and veto.kind == "tokens"
    # tools spend no tokens: an exactly used budget does not stop them, an exceeded one does
    assert budget_exceeded(at_limit, config, "tool_call") is None
    over = RunCounters(input_tokens=600, output_tokens=401)
    assert budget_exceeded(over, config, "tool_call") is not None
    fired = detector.observe(LLM, state, over)
    assert fired is not None and fired.kind == "tokens" and fired.evidence["used"] == 1001


def test_expected_tokens_veto_a_call_that_would_overrun() -> None:
    config = LoopGuardConfig(token_budget=1000)
    counters = RunCounters(input_tokens=900)
    assert budget_exceeded(counters, config, "llm_call", expected_tokens=100) is None
    veto = budget_exceeded(counters, config, "llm_call", expected_tokens=101)
    assert veto is not None and veto.kind == "tokens"


def test_cost_limit_needs_a_known_cost() -> None:
    config = LoopGuardConfig(cost_limit=0.5)
    detector = BudgetDetector(config)
    state = detector.new_state()
    unknown = RunCounters(input_tokens=10**9, cost=None)
    assert detector.observe(LLM, state, unknown) is None
    assert budget_exceeded(unknown, config, "llm_call") is None
    assert detector.observe(LLM, state, RunCounters(cost=0.5)) is None
    assert budget_exceeded(RunCounters(cost=0.5), config, "llm_call") is not None
    fired = detector.observe(LLM, state, RunCounters(cost=0.75))
    assert fired is not None and fired.kind == "cost" and fired.evidence["used"] == 0.75


def test_timeout_counts_wall_time_since_the_run_started() -> None:
    config = LoopGuardConfig(timeout=5)
    detector = BudgetDetector(config)
    state = detector.new_state()
    call = Event(EventKind.TOOL_CALL, "run-1", tool_name="search")
    assert detector.observe(call, state, RunCounters(started_at=100.0, now=104.9)) is None
    assert budget_exceeded(RunCounters(started_at=100.0, now=104.9), config, "tool_call") is None
    at_limit = RunCounters(started_at=100.0, now=105.0)
    assert detector.observe(call, state, at_limit) is None
    for kind in ("tool_call", "llm_call"):
        veto = budget_exceeded(at_limit, config, kind)  # type: ignore[arg-type]
        assert veto is not None and veto.kind == "time"
    fired = detector.observe(call, state, RunCounters(started_at=100.0, now=105.5))
    assert fired is not None and fired.kind == "time"


def test_each_exceeded_limit_is_reported_once() -> None:
    detector = BudgetDetector(LoopGuardConfig(max_steps=1, token_budget=10))
    state = detector.new_state()
    both = RunCounters(steps=2, input_tokens=50)
    kinds = [detector.observe(LLM, state, both) for _ in range(4)]
    assert [s.kind for s in kinds if s] == ["steps", "tokens"]


def test_export_restore_keeps_what_was_reported() -> None:
    detector = BudgetDetector(LoopGuardConfig(max_steps=1, token_budget=10))
    state = detector.new_state()
    assert detector.observe(LLM, state, RunCounters(steps=2)) is not None
    restored = detector.restore_state(json.loads(json.dumps(detector.export_state(state))))
    assert detector.observe(LLM, restored, RunCounters(steps=3)) is None
    fired = detector.observe(LLM, restored, RunCounters(steps=3, output_tokens=11))
    assert fired is not None and fired.kind == "tokens"


@pytest.mark.parametrize("data", [{}, {"fired": "steps"}, {"fired": [1, 2]}, {"fired": ["x"]}])
def test_restore_tolerates_bad_exports(data: dict) -> None:
    detector = BudgetDetector(LoopGuardConfig(max_steps=1))
    state = detector.restore_state(data)
    fired = detector.observe(LLM, state, RunCounters(steps=2))
    assert fired is not None and fired.kind == "steps"


# ---------------------------------------------------------------- through the monitor


class FakeClock:
    """A settable clock, so wall-time limits are tested without sleeping."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_monitor_stops_the_turn_after_max_steps() -> None:
    monitor = Monitor(LoopGuardConfig(max_steps=2))
    decisions = [monitor.observe(LLM) for _ in range(3)]
    assert [d.action for d in decisions] == [Action.CONTINUE, Action.CONTINUE, Action.STOP]
    stop = decisions[2]
    assert stop.end_state is RunEndState.MAX_STEPS
    assert [(s.detector, s.kind) for s in stop.reasons] == [("budget", "steps")]


def test_monitor_times_a_run_out_on_any_event() -> None:
    clock = FakeClock()
    monitor = Monitor(LoopGuardConfig(timeout=10), clock=clock)
    result = Event(EventKind.TOOL_RESULT, "run-1", tool_name="search")
    assert monitor.observe(result).action is Action.CONTINUE
    clock.now += 10
    assert monitor.observe(result).action is Action.CONTINUE  # 10 s allows 10 s
    clock.now += 0.5
    decision = monitor.observe(result)
    assert decision.action is Action.STOP and decision.end_state is RunEndState.TIMED_OUT


def test_monitor_enforces_a_cost_limit_from_the_price_table(tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"gpt-4o": {"input": 2.5, "output": 10}}), encoding="utf-8")
    monitor = Monitor(LoopGuardConfig(cost_limit=0.05, prices=str(prices)))

    def turn(model: str, run_id: str) -> Event:  # 0.01 + 0.01 = 0.02 per turn for gpt-4o
        return Event(
            EventKind.LLM_RESPONSE, run_id, model=model, input_tokens=4000, output_tokens=1000
        )

    actions = [monitor.observe(turn("gpt-4o-2024-08-06", "priced")).action for _ in range(3)]
    assert actions == [Action.CONTINUE, Action.CONTINUE, Action.STOP]
    summary = monitor.end_run("priced")
    assert summary is not None and summary.end_state is RunEndState.BUDGET_EXCEEDED
    assert summary.counters.cost == pytest.approx(0.06)
    # a model without a price: cost unknown, the limit is not applied (nothing is guessed)
    actions = [monitor.observe(turn("mystery-model", "unpriced")).action for _ in range(5)]
    assert set(actions) == {Action.CONTINUE}


def test_monitor_export_restore_keeps_the_limit_reported_once() -> None:
    config = LoopGuardConfig(max_steps=2, policy="observe")
    first = Monitor(config)
    for _ in range(3):
        first.observe(LLM)
    data = json.loads(json.dumps(first.export_run("run-1")))
    second = Monitor(config)
    second.restore_run(data)
    decision = second.observe(LLM)
    assert not any(s.detector == "budget" for s in decision.reasons)


@pytest.mark.parametrize("kind", ["llm_call", "tool_call"])
@pytest.mark.parametrize(
    "usage",
    [
        {},
        {"steps": 2},
        {"steps": 3},
        {"tool_calls": 1},
        {"tool_calls": 2},
        {"input_tokens": 999},
        {"input_tokens": 1000},
        {"input_tokens": 1001},
        {"input_tokens": 900, "expected": 100},
        {"input_tokens": 900, "expected": 101},
        {"cost": 0.99},
        {"cost": 1.0},
        {"cost": 1.01},
        {"cost": None, "input_tokens": 10},
        {"elapsed": 9.5},
        {"elapsed": 10.0},
    ],
)
def test_monitor_preflight_follows_the_same_limit_semantics(kind: str, usage: dict) -> None:
    """docs/configuration.md: "a limit of N allows N"; the monitor's veto must agree with ours."""
    config = LoopGuardConfig(
        max_steps=3, max_tool_calls=2, token_budget=1000, cost_limit=1.0, timeout=10
    )
    clock = FakeClock()
    monitor = Monitor(config, clock=clock)
    counters = {k: v for k, v in usage.items() if k != "expected"}
    monitor.restore_run({"run_id": "r", "counters": counters})
    expected_tokens = usage.get("expected", 0)
    ours = budget_exceeded(
        RunCounters(
            started_at=clock.now - usage.get("elapsed", 0.0),
            now=clock.now,
            steps=usage.get("steps", 0),
            tool_calls=usage.get("tool_calls", 0),
            input_tokens=usage.get("input_tokens", 0),
            cost=usage.get("cost", 0.0),
        ),
        config,
        kind,  # type: ignore[arg-type]
        expected_tokens=expected_tokens,
    )
    decision = monitor.preflight("r", kind, expected_tokens=expected_tokens)  # type: ignore[arg-type]
    assert (decision.action is Action.STOP) == (ours is not None)
    if ours is not None:
        assert [s.kind for s in decision.reasons] == [ours.kind]


def test_genai_spans_over_the_token_budget_warn_then_end_the_run_budget_exceeded() -> None:
    """Real SDK spans in the GenAI semantic conventions, fed through the span processor."""
    stack = sdk_stack(token_budget=4400)  # reserve 512 tokens
    with stack.tracer.start_as_current_span("invoke_agent writer", attributes=AGENT):
        for _ in range(4):
            chat_span(stack, "tool_calls", input_tokens=1500, output_tokens=500)
    stack.provider.shutdown()
    decisions = stack.decisions()
    assert [(d["loopguard.action"], d["loopguard.detectors"]) for d in decisions] == [
        ("warn", ("budget_proximity",)),  # 4000 of 4400 used: 400 left
        ("stop", ("budget",)),  # 6000: over
    ]
    (run,) = stack.spans("loopguard.run")
    assert run.attributes["loopguard.run.state"] == "budget_exceeded"
