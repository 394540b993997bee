"""Monitor mechanics: counting, dispatch, stopping, pre-flight, listeners, errors, restore."""

from __future__ import annotations

import json
import logging

import pytest
from monitor_doubles import (
    CountingDetector,
    FakeClock,
    RaisingDetector,
    SignatureTrigger,
    call,
    llm,
    result,
)

from otel_loopguard import Monitor
from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import CONTINUE, Action, Decision, RunEndState
from otel_loopguard.engine.detectors.repetition import RepetitionDetector
from otel_loopguard.engine.events import Event, EventKind


def make(*detectors, clock=None, policy=None, **settings) -> Monitor:
    return Monitor(
        LoopGuardConfig(**settings),
        detectors=list(detectors),
        policy=policy,
        clock=clock or FakeClock(),
    )


def test_counters_are_updated_before_detectors_see_the_event() -> None:
    counting = CountingDetector()
    monitor = make(counting)
    monitor.observe(call("r"))
    monitor.observe(result("r"))
    monitor.observe(llm("r", input_tokens=100, output_tokens=20))
    monitor.observe(llm("r", input_tokens=5, output_tokens=0))
    summary = monitor.run_snapshot("r")
    assert summary is not None
    counters = summary.counters
    assert (counters.events, counters.steps, counters.tool_calls) == (4, 2, 1)
    assert (counters.input_tokens, counters.output_tokens, counters.total_tokens) == (105, 20, 125)
    export = monitor.export_run("r")
    assert export is not None and export["detectors"]["counting"] == {"events": 4}


def test_detector_sees_the_counter_that_includes_its_event() -> None:
    counting = CountingDetector()
    monitor = make(counting)
    for _ in range(3):
        monitor.observe(call("r"))
    state = monitor._runs["r"].states[0]
    assert state.seen_counter_events == 3


def test_detectors_declaring_event_kinds_only_see_those_kinds() -> None:
    only_results = CountingDetector(event_kinds=frozenset({EventKind.TOOL_RESULT}))
    monitor = make(only_results)
    monitor.observe(call("r"))
    monitor.observe(result("r"))
    monitor.observe(llm("r"))
    assert monitor.export_run("r")["detectors"]["counting"] == {"events": 1}


def test_decision_carries_the_run_id() -> None:
    monitor = make(SignatureTrigger("tool:x()", "budget_proximity", "tokens"))
    quiet = monitor.observe(call("quiet", signature="tool:y()"))
    loud = monitor.observe(call("loud"))
    assert (quiet.action, quiet.run_id) == (Action.CONTINUE, "quiet")
    assert (loud.action, loud.run_id) == (Action.WARN, "loud")
    assert loud.detectors == ("budget_proximity",)


def test_stop_stays_stopped_and_detectors_no_longer_run() -> None:
    counting = CountingDetector()
    monitor = make(counting, SignatureTrigger("tool:handoff()", "handoff_cycle"))
    monitor.observe(call("r"))
    stop = monitor.observe(call("r", signature="tool:handoff()"))
    assert stop.action is Action.STOP and stop.end_state is RunEndState.STOPPED
    later = [monitor.observe(call("r", signature=f"tool:other{i}()")) for i in range(3)]
    assert all(decision is stop for decision in later)
    assert monitor.preflight("r") is stop
    export = monitor.export_run("r")
    assert export["detectors"]["counting"] == {"events": 2}
    assert export["counters"]["events"] == 5
    summary = monitor.end_run("r")
    assert summary.stopped and summary.end_state is RunEndState.STOPPED
    assert summary.first_stop.decision is stop and summary.first_stop.event_index == 2
    assert summary.final_action is Action.STOP


def test_a_raising_detector_is_contained_counted_and_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    counting = CountingDetector()
    monitor = make(RaisingDetector(), counting, SignatureTrigger("tool:bad()", "handoff_cycle"))
    with caplog.at_level(logging.WARNING, logger="otel_loopguard.engine.monitor"):
        for _ in range(5):
            assert monitor.observe(call("r")).action is Action.CONTINUE
        stop = monitor.observe(call("r", signature="tool:bad()"))
    assert monitor.internal_errors == 6
    assert stop.action is Action.STOP  # the run goes on and still decides
    assert monitor.export_run("r")["detectors"]["counting"] == {"events": 6}
    logged = [r for r in caplog.records if "detector raising" in r.getMessage()]
    assert len(logged) == 1


def test_a_raising_policy_continues_and_is_counted(caplog: pytest.LogCaptureFixture) -> None:
    def broken(policy_input):
        raise ValueError("policy bug")

    monitor = make(SignatureTrigger("tool:x()", "handoff_cycle"), policy=broken)
    with caplog.at_level(logging.WARNING, logger="otel_loopguard.engine.monitor"):
        decisions = [monitor.observe(call("r")) for _ in range(3)]
    assert [d.action for d in decisions] == [Action.CONTINUE] * 3
    assert all(d.run_id == "r" for d in decisions)
    assert monitor.internal_errors == 3
    assert sum("policy" in r.getMessage() for r in caplog.records) == 1


def test_a_policy_returning_something_else_is_an_internal_error() -> None:
    monitor = make(SignatureTrigger("tool:x()", "handoff_cycle"), policy=lambda _: "stop")
    assert monitor.observe(call("r")).action is Action.CONTINUE
    assert monitor.internal_errors == 1


def test_a_policy_stop_without_end_state_ends_as_stopped() -> None:
    monitor = make(policy=lambda _: Decision(Action.STOP, risk=1.0))
    decision = monitor.observe(call("r"))
    assert decision.end_state is RunEndState.STOPPED and decision.run_id == "r"


def test_bad_input_never_raises() -> None:
    monitor = make(CountingDetector())
    assert monitor.observe(None) is CONTINUE  # type: ignore[arg-type]
    assert monitor.observe("not an event") is CONTINUE  # type: ignore[arg-type]
    assert monitor.internal_errors == 2
    assert monitor.end_run("never-seen") is None
    assert monitor.run_snapshot("never-seen") is None
    assert monitor.export_run("never-seen") is None


def test_listeners_hear_each_non_continue_decision_once() -> None:
    heard: list[tuple[Action, str | None]] = []
    monitor = make(
        SignatureTrigger("tool:near()", "budget_proximity", "tokens"),
        SignatureTrigger("tool:stop()", "handoff_cycle"),
    )
    monitor.add_decision_listener(
        lambda decision, event: heard.append((decision.action, event.signature))
    )
    monitor.observe(call("r"))
    monitor.observe(call("r", signature="tool:near()"))
    monitor.observe(call("r", signature="tool:stop()"))
    monitor.observe(call("r", signature="tool:stop()"))  # already stopped: not re-announced
    assert heard == [(Action.WARN, "tool:near()"), (Action.STOP, "tool:stop()")]


def test_a_raising_listener_is_contained_and_others_still_hear(
    caplog: pytest.LogCaptureFixture,
) -> None:
    heard: list[Action] = []

    def broken(decision, event):
        raise RuntimeError("listener bug")

    monitor = make(SignatureTrigger("tool:x()", "budget_proximity", "tokens"))
    monitor.add_decision_listener(broken)
    monitor.add_decision_listener(lambda decision, event: heard.append(decision.action))
    with caplog.at_level(logging.WARNING, logger="otel_loopguard.engine.monitor"):
        decisions = [monitor.observe(call("r")) for _ in range(3)]
    assert [d.action for d in decisions] == [Action.WARN] * 3
    assert heard == [Action.WARN] * 3
    assert monitor.internal_errors == 3
    assert sum("listener" in r.getMessage() for r in caplog.records) == 1


def test_agent_name_comes_from_start_run_or_the_first_actor() -> None:
    monitor = make()
    monitor.start_run("a", agent="planner", keyed_by="conversation")
    monitor.observe(Event(EventKind.TOOL_CALL, "a", actor="coder"))
    monitor.observe(Event(EventKind.TOOL_CALL, "b", actor="coder"))
    a, b = monitor.run_snapshot("a"), monitor.run_snapshot("b")
    assert (a.agent, a.keyed_by, b.agent) == ("planner", "conversation", "coder")


@pytest.mark.parametrize(
    ("state", "expected"),
    [(None, RunEndState.COMPLETED), (RunEndState.CANCELLED, RunEndState.CANCELLED)],
)
def test_end_run_removes_the_run_and_reports_its_state(state, expected) -> None:
    monitor = make(CountingDetector())
    monitor.observe(call("r"))
    summary = monitor.end_run("r", state)
    assert summary.end_state is expected and summary.counters.events == 1
    assert monitor.active_runs == 0 and monitor.end_run("r") is None
    monitor.observe(call("r"))
    assert monitor.run_snapshot("r").counters.events == 1  # a fresh run


# ---------------------------------------------------------------- pre-flight


def test_preflight_of_an_unknown_run_continues_and_starts_it() -> None:
    monitor = make(max_steps=5)
    decision = monitor.preflight("new", "llm_call")
    assert decision.action is Action.CONTINUE and decision.run_id == "new"
    assert monitor.active_runs == 1


def test_preflight_max_steps_vetoes_the_model_call_past_the_limit() -> None:
    monitor = make(max_steps=2)
    monitor.observe(llm("r"))
    assert monitor.preflight("r", "llm_call").action is Action.CONTINUE
    assert monitor.preflight("r", "tool_call").action is Action.CONTINUE
    monitor.observe(llm("r"))
    veto = monitor.preflight("r", "llm_call")
    assert veto.action is Action.STOP and veto.end_state is RunEndState.MAX_STEPS
    assert veto.detectors == ("budget",) and veto.reasons[0].kind == "steps"
    assert monitor.observe(call("r")) is veto  # the veto stopped the run
    assert monitor.end_run("r").end_state is RunEndState.MAX_STEPS


def test_preflight_max_tool_calls() -> None:
    monitor = make(max_tool_calls=2)
    monitor.observe(call("r"))
    assert monitor.preflight("r", "tool_call").action is Action.CONTINUE
    monitor.observe(call("r"))
    assert monitor.preflight("r", "llm_call").action is Action.CONTINUE
    veto = monitor.preflight("r", "tool_call")
    assert veto.action is Action.STOP and veto.end_state is RunEndState.MAX_STEPS
    assert veto.reasons[0].kind == "tool_calls"


def test_preflight_timeout_uses_the_clock() -> None:
    clock = FakeClock()
    monitor = make(clock=clock, timeout=30)
    monitor.observe(call("r"))
    clock.advance(29.5)
    assert monitor.preflight("r").action is Action.CONTINUE
    clock.advance(0.5)
    veto = monitor.preflight("r", "tool_call")
    assert veto.action is Action.STOP and veto.end_state is RunEndState.TIMED_OUT


def test_preflight_token_budget_counts_the_expected_tokens() -> None:
    monitor = make(token_budget=1000)
    monitor.observe(llm("r", input_tokens=700, output_tokens=100))
    assert monitor.preflight("r", "llm_call", expected_tokens=200).action is Action.CONTINUE
    assert monitor.preflight("r", "tool_call", expected_tokens=5000).action is Action.CONTINUE
    veto = monitor.preflight("r", "llm_call", expected_tokens=201)
    assert veto.action is Action.STOP and veto.end_state is RunEndState.BUDGET_EXCEEDED
    assert veto.reasons[0].kind == "tokens"


def test_preflight_token_budget_vetoes_a_model_call_with_no_headroom() -> None:
    monitor = make(token_budget=100)
    monitor.observe(llm("r", input_tokens=60, output_tokens=40))
    assert monitor.preflight("r", "tool_call").action is Action.CONTINUE
    assert monitor.preflight("r", "llm_call").action is Action.STOP


def test_preflight_cost_limit() -> None:
    monitor = make(cost_limit=0.5)
    monitor.restore_run({"run_id": "r", "counters": {"cost": 0.25}})
    assert monitor.preflight("r", "llm_call").action is Action.CONTINUE
    monitor.restore_run({"run_id": "r", "counters": {"cost": 0.5}})
    assert monitor.preflight("r", "tool_call").action is Action.CONTINUE
    veto = monitor.preflight("r", "llm_call")
    assert veto.action is Action.STOP and veto.end_state is RunEndState.BUDGET_EXCEEDED
    assert veto.reasons[0].kind == "cost"


def test_preflight_with_unknown_cost_does_not_veto() -> None:
    monitor = make(cost_limit=0.5)
    monitor.restore_run({"run_id": "r", "counters": {"cost": None}})
    assert monitor.preflight("r", "llm_call").action is Action.CONTINUE


def test_preflight_without_limits_continues_forever() -> None:
    monitor = make()
    for _ in range(50):
        monitor.observe(llm("r", input_tokens=10_000))
        monitor.observe(call("r"))
    assert monitor.preflight("r", "llm_call", expected_tokens=10**9).action is Action.CONTINUE


def test_preflight_under_the_observe_policy_only_warns() -> None:
    monitor = make(
        max_steps=1, policy=__import__("otel_loopguard.engine.policy").engine.policy.observe
    )
    monitor.observe(llm("r"))
    decision = monitor.preflight("r", "llm_call")
    assert decision.action is Action.WARN and not monitor.run_snapshot("r").stopped


def test_preflight_veto_is_announced_to_listeners() -> None:
    heard = []
    monitor = make(max_tool_calls=1)
    monitor.add_decision_listener(lambda decision, event: heard.append((decision, event)))
    monitor.observe(call("r"))
    veto = monitor.preflight("r")
    assert len(heard) == 1 and heard[0][0] is veto
    assert heard[0][1].details == {"preflight": True}


# ---------------------------------------------------------------- export / restore


def test_export_is_json_and_restore_continues_counts() -> None:
    clock = FakeClock()
    first = make(CountingDetector(), SignatureTrigger("tool:w()", "budget_proximity"), clock=clock)
    first.start_run("conv", agent="helper", keyed_by="conversation")
    for _ in range(3):
        first.observe(call("conv"))
        first.observe(llm("conv", input_tokens=10, output_tokens=1))
    first.observe(call("conv", signature="tool:w()"))
    clock.advance(12)
    exported = first.export_run("conv")
    wire = json.loads(json.dumps(exported))
    assert len(json.dumps(exported)) < 4096

    second_clock = FakeClock(start=5.0)  # a new process: another clock origin
    second = make(
        CountingDetector(), SignatureTrigger("tool:w()", "budget_proximity"), clock=second_clock
    )
    second.restore_run(wire)
    second.observe(call("conv"))
    summary = second.run_snapshot("conv")
    assert (summary.counters.events, summary.counters.tool_calls, summary.counters.steps) == (
        8,
        5,
        3,
    )
    assert summary.counters.total_tokens == 33
    assert summary.agent == "helper" and summary.keyed_by == "conversation"
    assert summary.signals == 1 and summary.final_action is Action.WARN
    assert second.export_run("conv")["detectors"]["counting"] == {"events": 8}
    assert second.export_run("conv")["counters"]["elapsed"] == pytest.approx(12.0)
    assert second._runs["conv"].window[0].detector == "budget_proximity"


def test_a_restored_stopped_run_stays_stopped() -> None:
    first = make(SignatureTrigger("tool:x()", "handoff_cycle"))
    stop = first.observe(call("r"))
    second = make(SignatureTrigger("tool:x()", "handoff_cycle"))
    second.restore_run(json.loads(json.dumps(first.export_run("r"))))
    assert second.run_snapshot("r").first_stop.event_index == 1
    again = second.observe(call("r", signature="tool:fine()"))
    assert again.action is Action.STOP and again.end_state is stop.end_state
    assert again.reasons[0].message == stop.reasons[0].message
    assert second.preflight("r") is again


def test_an_override_in_a_python_subclass_of_a_built_in_detector_is_what_runs() -> None:
    """The built-in detectors are compiled classes in the compiled build that allow Python
    subclasses: a subclass's ``observe`` must be the one the monitor calls, with the
    built-in's own judgement behind it, beside a plug-in that has only the protocol's
    methods."""
    seen: list[EventKind] = []

    class Audited(RepetitionDetector):
        def observe(self, event, state, counters):
            seen.append(event.kind)
            return super().observe(event, state, counters)

    plug_in = CountingDetector()
    monitor = make(Audited(LoopGuardConfig(repetition_threshold=3)), plug_in)
    decisions = []
    for _ in range(3):
        decisions.append(monitor.observe(call("r", signature="tool:search(q=same)")))
        decisions.append(monitor.observe(result("r")))

    assert seen == [EventKind.TOOL_CALL, EventKind.TOOL_RESULT] * 3
    assert monitor.export_run("r")["detectors"]["counting"] == {"events": 6}
    flagged = [d.detectors for d in decisions if d.action is not Action.CONTINUE]
    assert flagged and flagged[0] == ("repetition",)


def test_restore_tolerates_missing_keys_and_bad_detector_state() -> None:
    class Picky(CountingDetector):
        def restore_state(self, data):
            raise KeyError("events")

    monitor = make(Picky())
    monitor.restore_run({"run_id": "r", "detectors": {"counting": {"bad": 1}}})
    monitor.observe(call("r"))
    assert monitor.internal_errors == 1
    assert monitor.run_snapshot("r").counters.events == 1


# ---------------------------------------------------------------- cost


def priced(tmp_path, **settings) -> Monitor:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"gpt-4o": {"input": 2.5, "output": 10.0}}))
    return make(prices=str(prices), **settings)


def test_cost_is_counted_from_the_price_table(tmp_path) -> None:
    monitor = priced(tmp_path)
    monitor.observe(llm("r", input_tokens=1_000_000, output_tokens=0, model="gpt-4o"))
    monitor.observe(llm("r", input_tokens=0, output_tokens=100_000, model="gpt-4o-2024-08-06"))
    assert monitor.run_snapshot("r").counters.cost == pytest.approx(3.5)


def test_an_unknown_model_makes_cost_unknown_for_the_run(tmp_path) -> None:
    monitor = priced(tmp_path, cost_limit=1.0)
    monitor.observe(llm("r", input_tokens=10, model="gpt-4o"))
    monitor.observe(llm("r", input_tokens=10, model="mystery-model"))
    monitor.observe(llm("r", input_tokens=10, model="gpt-4o"))
    assert monitor.run_snapshot("r").counters.cost is None
    assert monitor.preflight("r", "llm_call").action is Action.CONTINUE


def test_preflight_cost_limit_from_real_usage(tmp_path) -> None:
    monitor = priced(tmp_path, cost_limit=1.0)
    monitor.observe(llm("r", input_tokens=200_000, model="gpt-4o"))  # 0.5
    assert monitor.preflight("r", "llm_call").action is Action.CONTINUE
    monitor.observe(llm("r", input_tokens=200_000, model="gpt-4o"))  # 1.0: no headroom left
    veto = monitor.preflight("r", "llm_call")
    assert veto.action is Action.STOP and veto.end_state is RunEndState.BUDGET_EXCEEDED


# ---------------------------------------------------------------- restore with real detectors


def test_a_restored_run_keeps_counting_with_the_default_detectors() -> None:
    """Two identical calls before the restart, the third after it: repetition still fires."""
    from otel_loopguard.engine.events import tool_call, tool_result

    before = Monitor(LoopGuardConfig(), clock=FakeClock())
    for _ in range(2):
        assert before.observe(tool_call("conv", "search", {"q": "pricing"})).action is (
            Action.CONTINUE
        )
        before.observe(tool_result("conv", "search", "no results"))
    wire = json.dumps(before.export_run("conv"))

    after = Monitor(LoopGuardConfig(), clock=FakeClock(start=3.0))
    after.restore_run(json.loads(wire))
    third = after.observe(tool_call("conv", "search", {"q": "pricing"}))
    assert third.action is Action.WARN and "repetition" in third.detectors
    assert after.observe(tool_result("conv", "search", "no results")).action is Action.STOP

    fresh = Monitor(LoopGuardConfig(), clock=FakeClock())  # without the restore: nothing
    assert fresh.observe(tool_call("conv", "search", {"q": "pricing"})).action is Action.CONTINUE


def _two_unchanged_answers_then_restart_mid_call(*, old_format: bool) -> Monitor:
    """Two identical answered calls, then a third call; the process restarts before its result.

    ``old_format`` moves the pending calls where exports before monitor-level pairing kept
    them (inside the no_progress detector's state).
    """
    from otel_loopguard.engine.events import tool_call, tool_result

    before = Monitor(LoopGuardConfig(), clock=FakeClock())
    for _ in range(2):
        before.observe(tool_call("conv", "status", {"job": 7}))
        before.observe(tool_result("conv", "status", "pending"))
    before.observe(tool_call("conv", "status", {"job": 7}))
    data = json.loads(json.dumps(before.export_run("conv")))
    if old_format:
        data["detectors"]["no_progress"]["pending"] = data.pop("pending")
    after = Monitor(LoopGuardConfig(), clock=FakeClock(start=3.0))
    after.restore_run(data)
    return after


@pytest.mark.parametrize("old_format", [False, True])
def test_a_result_after_a_restore_answers_the_call_made_before_it(old_format: bool) -> None:
    """The third unchanged answer arrives after the restart: no_progress still sees it."""
    from otel_loopguard.engine.events import tool_result

    after = _two_unchanged_answers_then_restart_mid_call(old_format=old_format)
    decision = after.observe(tool_result("conv", "status", "pending"))
    assert "no_progress" in decision.detectors


@pytest.mark.parametrize(
    "data",
    [None, "text", {}, {"run_id": "r", "counters": {"events": "many"}}, {"run_id": "r", "stop": 3}],
)
def test_restore_of_unusable_data_never_raises(data, caplog: pytest.LogCaptureFixture) -> None:
    monitor = make(CountingDetector())
    with caplog.at_level(logging.WARNING, logger="otel_loopguard.engine.monitor"):
        monitor.restore_run(data)  # type: ignore[arg-type]
    assert monitor.internal_errors == 1 and monitor.active_runs == 0
    assert any("restore_run" in r.getMessage() for r in caplog.records)


def test_event_kind_given_as_a_plain_string_is_understood() -> None:
    monitor = make(CountingDetector(event_kinds=frozenset({EventKind.TOOL_CALL})))
    monitor.observe(Event("tool_call", "r", tool_name="x"))  # type: ignore[arg-type]
    monitor.observe(Event("llm_response", "r"))  # type: ignore[arg-type]
    summary = monitor.run_snapshot("r")
    assert (summary.counters.tool_calls, summary.counters.steps) == (1, 1)
    assert monitor.export_run("r")["detectors"]["counting"] == {"events": 1}
    assert monitor.observe(Event("bogus", "r")) is CONTINUE  # type: ignore[arg-type]


def test_the_policy_sees_the_last_signal_window_signals_oldest_first() -> None:
    seen: list[tuple[tuple[str, ...], tuple[str, ...]]] = []

    def recording(policy_input):
        seen.append(
            (
                tuple(s.message for s in policy_input.new_signals),
                tuple(s.message for s in policy_input.window),
            )
        )
        return CONTINUE

    triggers = [SignatureTrigger(f"tool:t{n}()", f"d{n}") for n in range(5)]
    monitor = make(*triggers, policy=recording, signal_window=3)
    for n in range(5):
        monitor.observe(call("r", f"tool:t{n}()"))
    monitor.observe(call("r", "tool:quiet()"))
    assert seen[0] == (("d0 on tool:t0()",), ("d0 on tool:t0()",))
    assert seen[4][1] == ("d2 on tool:t2()", "d3 on tool:t3()", "d4 on tool:t4()")
    assert seen[5] == ((), seen[4][1])  # a user policy is called on quiet events too
    assert [s["detector"] for s in monitor.export_run("r")["signals"]] == ["d2", "d3", "d4"]
    assert monitor.run_snapshot("r").signals == 5
