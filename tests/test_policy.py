"""Policies: presets decide from evidence, user policies load by import path."""

from __future__ import annotations

import itertools
import logging

import pytest
from monitor_doubles import FakeClock, SignatureTrigger, call

from otel_loopguard import Monitor
from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import CONTINUE, Action, Decision, RunEndState, Signal
from otel_loopguard.engine.detectors.base import RunCounters
from otel_loopguard.engine.events import Event, EventKind, tool_call, tool_result
from otel_loopguard.engine.policy import (
    PolicyInput,
    default,
    load_policy,
    observe,
    risk_score,
    strict,
)
from otel_loopguard.engine.policy import (
    strict as strict_preset,
)

CONFIG = LoopGuardConfig()
EVENT = Event(EventKind.TOOL_CALL, "r", tool_name="search", signature="tool:search(q=x)")


def signal(detector: str, kind: str | None = None, score: float = 0.8, **extra) -> Signal:
    return Signal(detector, kind or detector, score, f"{detector}/{kind or detector}", **extra)


def decide(policy, new: list[Signal], earlier: list[Signal] = ()):
    window = (*earlier, *new)
    return policy(PolicyInput("r", EVENT, tuple(new), window, RunCounters(), CONFIG))


def test_no_new_signal_continues_without_work() -> None:
    for policy in (default, strict, observe):
        assert decide(policy, [], [signal("repetition", "exact")]) is CONTINUE


@pytest.mark.parametrize("loop", ["repetition", "action_cycle", "repeated_tool_steps"])
def test_default_warns_on_a_loop_signal_alone(loop: str) -> None:
    decision = decide(default, [signal(loop)])
    assert decision.action is Action.WARN and decision.end_state is None
    assert decision.detectors == (loop,)


@pytest.mark.parametrize("loop", ["repetition", "action_cycle", "repeated_tool_steps"])
def test_default_stops_a_loop_with_no_progress_evidence_in_either_order(loop: str) -> None:
    no_progress = signal("no_progress")
    loop_first = decide(default, [no_progress], [signal(loop), signal("budget_proximity")])
    progress_first = decide(default, [signal(loop)], [no_progress])
    for decision in (loop_first, progress_first):
        assert decision.action is Action.STOP
        assert decision.end_state is RunEndState.STOPPED
        assert set(decision.detectors) == {loop, "no_progress"}  # the evidence, nothing else


def test_loop_and_no_progress_about_different_tools_only_warn() -> None:
    polling = signal("repetition", "exact", evidence={"tool": "status"})
    stuck = signal("no_progress", evidence={"tool": "search"})
    assert decide(default, [polling], [stuck]).action is Action.WARN
    assert decide(default, [stuck], [polling]).action is Action.WARN
    same = signal("no_progress", evidence={"tool": "status"})
    assert decide(default, [same], [stuck, polling]).action is Action.STOP
    cycle = signal("action_cycle", evidence={"tools": ["search", "open"]})
    assert decide(default, [cycle], [stuck]).action is Action.STOP
    unnamed_step = signal("repeated_tool_steps", evidence={"tools": []})
    assert decide(default, [unnamed_step], [stuck]).action is Action.STOP


def test_no_progress_alone_warns() -> None:
    assert decide(default, [signal("no_progress")]).action is Action.WARN


@pytest.mark.parametrize(
    ("new", "action", "end_state"),
    [
        (signal("permanent_failure", "permanent"), Action.STOP, RunEndState.STOPPED),
        (signal("permanent_failure", "retryable"), Action.PAUSE, None),
        (signal("permanent_failure", "unclassified"), Action.PAUSE, None),
        (signal("permanent_failure", "persistent"), Action.STOP, RunEndState.STOPPED),
        (signal("handoff_cycle"), Action.STOP, RunEndState.STOPPED),
        (signal("budget", "steps"), Action.STOP, RunEndState.MAX_STEPS),
        (signal("budget", "tool_calls"), Action.STOP, RunEndState.MAX_STEPS),
        (signal("budget", "time"), Action.STOP, RunEndState.TIMED_OUT),
        (signal("budget", "tokens"), Action.STOP, RunEndState.BUDGET_EXCEEDED),
        (signal("budget", "cost"), Action.STOP, RunEndState.BUDGET_EXCEEDED),
        (signal("budget_proximity", "tokens"), Action.WARN, None),
        (signal("truncation", "exhausted"), Action.STOP, RunEndState.STOPPED),
        (signal("truncation", "ended"), Action.WARN, None),
        (signal("premature_end", "exhausted"), Action.STOP, RunEndState.STOPPED),
        (signal("some_plugin"), Action.WARN, None),
    ],
)
def test_default_actions(new: Signal, action: Action, end_state) -> None:
    decision = decide(default, [new])
    assert (decision.action, decision.end_state) == (action, end_state)
    assert decision.reasons == (new,)


@pytest.mark.parametrize(
    ("detector", "kind"),
    [
        ("read_only_loop", None),
        ("shell_failure", None),
        ("truncation", "recovery"),
        ("premature_end", "recovery"),
    ],
)
def test_default_replans_with_the_signal_recommendation(detector: str, kind) -> None:
    decision = decide(default, [signal(detector, kind, recommendation=f"try {detector}")])
    assert decision.action is Action.REPLAN
    assert decision.recommendation == f"try {detector}"


def test_the_most_severe_signal_wins_and_only_its_evidence_is_given() -> None:
    stop = signal("handoff_cycle")
    decision = decide(
        default,
        [signal("read_only_loop", recommendation="nudge"), stop, signal("budget_proximity")],
    )
    assert decision.action is Action.STOP and decision.reasons == (stop,)
    assert decision.recommendation is None


def test_risk_combines_fresh_evidence_and_fades_old() -> None:
    one = risk_score((signal("x", score=0.5),))
    two = risk_score((signal("x", score=0.5), signal("y", score=0.5)))
    assert one == pytest.approx(0.5)
    assert one < two < 1.0
    faded = risk_score((signal("x", score=0.5), *[signal("z", score=0.0)] * 10))
    assert faded < 0.1
    assert risk_score((signal("x", score=3.0),)) == 1.0
    for decision in (
        decide(default, [signal("repetition", score=0.6)]),
        decide(default, [signal("no_progress", score=0.9)], [signal("repetition", score=0.6)]),
    ):
        assert 0.0 <= decision.risk <= 1.0
    assert decide(default, [signal("handoff_cycle", score=0.95)]).risk >= 0.95


@pytest.mark.parametrize("policy", [default, strict_preset], ids=["default", "strict"])
def test_risk_ranks_the_action_first(policy) -> None:
    """Every warn scores below every replan, pause and stop of the same policy, whatever the
    evidence: the healthy run's polling warn (strong evidence of repeating, which is what
    polling does) must not look as risky as a stuck run's stop."""
    by_action: dict[Action, list[float]] = {}
    cases = [
        ([signal(detector, kind, score=score)], earlier)
        for score in (0.0, 0.3, 0.79, 1.0)
        for detector, kind in [
            ("repetition", None),
            ("repeated_tool_steps", None),
            ("no_progress", None),
            ("budget_proximity", None),
            ("my_plugin", None),
            ("read_only_loop", None),
            ("permanent_failure", "retryable"),
            ("permanent_failure", "permanent"),
            ("handoff_cycle", None),
            ("budget", "tokens"),
        ]
        for earlier in ([], [signal("x", score=1.0)] * 5)
    ]
    for new, earlier in cases:
        decision = decide(policy, new, earlier)
        by_action.setdefault(decision.action, []).append(decision.risk)
    assert set(by_action) >= {Action.WARN, Action.REPLAN, Action.PAUSE, Action.STOP}
    ranked = [by_action[a] for a in (Action.WARN, Action.REPLAN, Action.PAUSE, Action.STOP)]
    for lower, higher in itertools.pairwise(ranked):
        assert max(lower) < min(higher), (lower, higher)
    assert all(0.0 < risk <= 1.0 for risks in ranked for risk in risks)


@pytest.mark.parametrize("loop", ["repetition", "action_cycle", "repeated_tool_steps"])
def test_strict_stops_loops_regardless_of_output(loop: str) -> None:
    decision = decide(strict_preset, [signal(loop)])
    assert decision.action is Action.STOP and decision.end_state is RunEndState.STOPPED


def test_strict_stops_whatever_default_stops() -> None:
    for new in (
        signal("handoff_cycle"),
        signal("budget", "steps"),
        signal("truncation", "exhausted"),
    ):
        assert decide(strict_preset, [new]) == decide(default, [new])
    assert decide(strict_preset, [signal("no_progress")]).action is Action.WARN


def test_observe_never_goes_above_warn_but_keeps_the_evidence() -> None:
    for new, earlier in [
        ([signal("handoff_cycle")], []),
        ([signal("budget", "time")], []),
        ([signal("read_only_loop", recommendation="nudge")], []),
        ([signal("no_progress")], [signal("repetition")]),
    ]:
        decision = decide(observe, new, earlier)
        reference = decide(default, new, earlier)
        assert reference.action > Action.WARN
        assert decision.action is Action.WARN and decision.end_state is None
        assert decision.reasons == reference.reasons and decision.risk == reference.risk


# ---------------------------------------------------------------- through the monitor


def monitor_with(policy_name: str) -> Monitor:
    config = LoopGuardConfig(policy=policy_name)
    detectors = [
        SignatureTrigger("tool:poll()", "repetition", "exact"),
        SignatureTrigger("result:same", "no_progress"),
        SignatureTrigger("tool:stuck()", "handoff_cycle"),
    ]
    return Monitor(config, detectors=detectors, clock=FakeClock())


def test_monitor_uses_the_configured_preset() -> None:
    for name, expected in [
        ("default", Action.WARN),
        ("strict", Action.STOP),
        ("observe", Action.WARN),
    ]:
        monitor = monitor_with(name)
        assert monitor.observe(call("r", "tool:poll()")).action is expected, name
    monitor = monitor_with("observe")
    for _ in range(3):
        monitor.observe(call("r", "tool:poll()"))
        monitor.observe(Event(EventKind.TOOL_RESULT, "r", signature="result:same"))
        assert monitor.observe(call("r", "tool:stuck()")).action is Action.WARN
    assert not monitor.run_snapshot("r").stopped


def test_default_through_the_monitor_stops_only_with_unchanged_output() -> None:
    polling = monitor_with("default")
    for i in range(5):
        assert polling.observe(call("r", "tool:poll()")).action is Action.WARN
        polling.observe(Event(EventKind.TOOL_RESULT, "r", signature=f"result:{i}"))
    assert not polling.run_snapshot("r").stopped

    stuck = monitor_with("default")
    stuck.observe(call("r", "tool:poll()"))
    decision = stuck.observe(Event(EventKind.TOOL_RESULT, "r", signature="result:same"))
    assert decision.action is Action.STOP
    assert set(decision.detectors) == {"repetition", "no_progress"}


# ---------------------------------------------------------------- loading


@pytest.mark.parametrize("name", ["default", "strict", "observe", " Strict "])
def test_presets_load_by_name(name: str) -> None:
    assert (
        load_policy(name)
        is {"default": default, "strict": strict, "observe": observe}[name.strip().lower()]
    )


def test_none_and_empty_load_the_default() -> None:
    assert load_policy(None) is default and load_policy("") is default


def test_user_policy_loads_by_import_path() -> None:
    policy = load_policy("policies_for_tests:pause_on_any_signal")
    monitor = Monitor(
        LoopGuardConfig(),
        detectors=[SignatureTrigger("tool:x()", "repetition")],
        policy=policy,
        clock=FakeClock(),
    )
    assert monitor.observe(call("r", "tool:y()")).action is Action.CONTINUE
    assert monitor.observe(call("r", "tool:x()")).action is Action.PAUSE


def test_user_policy_from_the_environment_and_nested_attribute() -> None:
    config = LoopGuardConfig.from_env(
        {"OTEL_LOOPGUARD_POLICY": "policies_for_tests:Namespace.stop_after_five_events"}
    )
    monitor = Monitor(config, detectors=[], clock=FakeClock())
    actions = [monitor.observe(call("r")).action for _ in range(6)]
    assert actions == [Action.CONTINUE] * 4 + [Action.STOP] * 2


def test_a_loosely_typed_user_policy_still_stops_the_run() -> None:
    """``Decision("stop", 1, [...])`` is ``Action.STOP`` with risk 1.0 and a tuple of
    reasons, on both builds (a plain-string action once never stopped anything, and a
    compiled build rejected the types)."""
    monitor = Monitor(
        LoopGuardConfig(),
        detectors=[],
        policy=load_policy("policies_for_tests:loosely_typed"),
        clock=FakeClock(),
    )
    decisions = [monitor.observe(call("r")) for _ in range(4)]
    assert [d.action for d in decisions] == [Action.CONTINUE] * 2 + [Action.STOP] * 2
    stop = decisions[2]
    assert stop.risk == 1.0 and isinstance(stop.risk, float)
    assert stop.detectors == ("my_policy",) and stop.reasons[0].evidence == {}
    assert stop.reasons[0].score == 1.0
    assert monitor.internal_errors == 0
    summary = monitor.end_run("r")
    assert summary is not None and summary.end_state is RunEndState.STOPPED


def test_a_decision_refuses_an_unknown_action() -> None:
    with pytest.raises(ValueError):
        Decision("explode")
    assert Decision("warn", None, None).reasons == ()  # "no reasons", however written


@pytest.mark.parametrize(
    "spec",
    [
        "no_such_module_for_loopguard:policy",
        "policies_for_tests:missing",
        "policies_for_tests:NOT_CALLABLE",
        "policies_for_tests",
        "lenient",
        "policies_for_tests:",
    ],
)
def test_bad_policy_path_warns_once_and_uses_default(
    spec: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="otel_loopguard.engine.policy"):
        assert load_policy(spec) is default
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 1
    message = messages[0]
    assert "OTEL_LOOPGUARD_POLICY" in message and repr(spec) in message
    assert "default, strict, observe or package.module:callable" in message


def test_user_policy_that_raises_continues_counted_and_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    monitor = Monitor(
        LoopGuardConfig(policy="policies_for_tests:broken"), detectors=[], clock=FakeClock()
    )
    with caplog.at_level(logging.WARNING):
        actions = [monitor.observe(call("r")).action for _ in range(4)]
    assert actions == [Action.CONTINUE] * 4
    assert monitor.internal_errors == 4
    assert sum("user policy bug" in r.getMessage() for r in caplog.records) == 1


# ---------------------------------------------------------------- real detectors, default set


def default_monitor(**settings) -> Monitor:
    return Monitor(LoopGuardConfig(**settings), clock=FakeClock())


def model_turn(run_id: str, finish: str = "tool_calls", tools: tuple[str, ...] = ("c",)) -> Event:
    return Event(
        EventKind.LLM_RESPONSE,
        run_id,
        model="m",
        finish_reason=finish,
        input_tokens=10,
        output_tokens=10,
        requested_tool_calls=tools,
    )


def test_default_stops_a_run_over_max_steps_as_max_steps() -> None:
    monitor = default_monitor(max_steps=3)
    actions = [monitor.observe(model_turn("r", tools=(f"c{n}",))).action for n in range(4)]
    assert actions == [Action.CONTINUE] * 3 + [Action.STOP]
    assert monitor.end_run("r").end_state is RunEndState.MAX_STEPS


def test_default_replans_truncations_then_only_warns_when_recoveries_are_used_up() -> None:
    monitor = default_monitor(max_tokens_recoveries=2)
    decisions = [monitor.observe(model_turn("r", finish="length")) for _ in range(3)]
    assert [d.action for d in decisions] == [Action.REPLAN, Action.REPLAN, Action.WARN]
    assert decisions[0].recommendation and decisions[0].detectors == ("truncation",)
    assert decisions[2].end_state is None


def test_default_nudges_a_read_only_loop_with_replan() -> None:
    monitor = default_monitor(read_only_loop_threshold=3)
    decisions = []
    for n in range(4):
        decisions.append(monitor.observe(model_turn("r")))
        monitor.observe(
            Event(EventKind.TOOL_CALL, "r", tool_name="read_file", signature=f"read {n}")
        )
    replans = [d for d in decisions if d.action is Action.REPLAN]
    assert len(replans) == 1 and replans[0].detectors == ("read_only_loop",)
    assert "read-only" in replans[0].reason and replans[0].recommendation


def test_observe_policy_with_real_detectors_never_stops() -> None:
    monitor = default_monitor(max_steps=1, policy="observe")
    actions = {monitor.observe(model_turn("r", finish="length")).action for _ in range(6)}
    assert Action.WARN in actions and max(actions) is Action.WARN
    assert not monitor.run_snapshot("r").stopped


def test_default_real_detectors_warn_on_repeats_with_changing_output() -> None:
    """Polling: the same call, a different answer each time, is not stopped."""
    monitor = default_monitor()
    actions = []
    for n in range(6):
        actions.append(monitor.observe(tool_call("r", "status", {"job": "42"})).action)
        monitor.observe(tool_result("r", "status", f"running, {n * 10}% done"))
    assert Action.WARN in actions and Action.STOP not in actions
    assert not monitor.run_snapshot("r").stopped


def test_default_real_detectors_stop_repeats_with_unchanged_output() -> None:
    monitor = default_monitor()
    decisions = []
    for _ in range(4):
        decisions.append(monitor.observe(tool_call("r", "search", {"query": "pricing"})))
        decisions.append(monitor.observe(tool_result("r", "search", "no results")))
    stop = next(d for d in decisions if d.action is Action.STOP)
    assert {"repetition", "no_progress"} <= set(stop.detectors)
    assert monitor.end_run("r").end_state is RunEndState.STOPPED


def test_strict_real_detectors_stop_three_identical_steps_with_changing_output() -> None:
    monitor = default_monitor(policy="strict")
    default_run = default_monitor()
    for n in range(3):
        for guard in (monitor, default_run):
            call_event = tool_call("r", "run_tests", {"path": "tests/"})
            turn = model_turn("r", tools=(call_event.signature,))
            guard.observe(turn)
            guard.observe(call_event)
            guard.observe(tool_result("r", "run_tests", f"{n} failed"))
    summary = monitor.run_snapshot("r")
    assert summary.stopped
    assert "repeated_tool_steps" in summary.first_stop.decision.detectors
    assert not default_run.run_snapshot("r").stopped  # default: output changed, only warns


# ---------------------------------------------------------------- sub-agents


def decide_for(agent, replans: int, new: list[Signal], policy=default, **settings):
    config = LoopGuardConfig(**settings)
    window = tuple(new)
    return policy(PolicyInput("r", EVENT, window, window, RunCounters(), config, agent, replans))


def test_a_loop_stop_about_a_sub_agent_is_a_replan_naming_it_until_the_replans_are_used() -> None:
    goto = {"tool": "goto"}
    loop = [signal("repetition", "exact", evidence=goto), signal("no_progress", evidence=goto)]
    first = decide_for("coder", 0, loop)
    assert first.action is Action.REPLAN and first.end_state is None
    assert first.recommendation and "sub-agent coder" in first.recommendation
    assert set(first.detectors) == {"repetition", "no_progress"}
    assert decide_for("coder", 3, loop).action is Action.STOP
    assert decide_for("coder", 0, loop, sub_agent_replans=0).action is Action.STOP
    assert decide_for(None, 0, loop).action is Action.STOP  # the run's own agent
    assert decide_for("coder", 0, loop, policy=strict_preset).action is Action.STOP


def test_run_level_stops_about_a_sub_agent_still_stop() -> None:
    for new in (
        signal("handoff_cycle"),
        signal("budget", "steps"),
        signal("truncation", "exhausted"),
    ):
        assert decide_for("coder", 0, [new]).action is Action.STOP
