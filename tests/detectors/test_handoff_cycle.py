"""Handoff cycle: closed cycles between agents that repeat fire; one-way handoffs do not."""

from __future__ import annotations

from scripted_runs import Driver, handoff

from otel_loopguard.engine.detectors.handoff_cycle import HandoffCycleDetector


def test_two_agent_cycle_fires_on_the_second_closure() -> None:
    run = Driver(HandoffCycleDetector)
    assert run.feed([handoff("triage", "billing"), handoff("billing", "triage")]) == []
    (signal,) = run.feed([handoff("triage", "billing"), handoff("billing", "triage")])
    assert (signal.detector, signal.kind) == ("handoff_cycle", "handoff_cycle")
    assert signal.evidence["agents"] == ["billing", "triage"]
    assert signal.message == "handoff cycle billing → triage → billing closed 2 times"


def test_three_agent_cycle_is_one_cycle_from_any_starting_point() -> None:
    run = Driver(HandoffCycleDetector)
    from_a = [handoff("a", "b"), handoff("b", "c"), handoff("c", "a")]
    from_b = [handoff("b", "c"), handoff("c", "a"), handoff("a", "b")]
    signals = run.feed(from_a + from_b)
    assert [s.evidence["cycles"] for s in signals] == [2]


def test_one_way_repeated_handoffs_are_not_a_cycle() -> None:
    run = Driver(HandoffCycleDetector)
    assert run.feed([handoff("router", "worker")] * 20) == []


def test_cycle_inside_a_longer_chain() -> None:
    run = Driver(HandoffCycleDetector)
    events = [handoff("entry", "planner")]
    events += [handoff("planner", "coder"), handoff("coder", "planner")] * 2
    (signal,) = run.feed(events)
    assert signal.evidence["agents"] == ["coder", "planner"]


def test_threshold_comes_from_config() -> None:
    run = Driver(HandoffCycleDetector, handoff_cycle_threshold=3)
    back_and_forth = [handoff("a", "b"), handoff("b", "a")]
    assert run.feed(back_and_forth * 2) == []
    assert run.feed(back_and_forth)


def test_export_restore_mid_run_continues_counts() -> None:
    run = Driver(HandoffCycleDetector)
    run.feed([handoff("a", "b"), handoff("b", "a"), handoff("a", "b")])
    run.reload()
    assert run.feed([handoff("b", "a")])


def test_state_stays_bounded_after_100k_distinct_handoffs() -> None:
    run = Driver(HandoffCycleDetector)
    events = (handoff(f"agent{i}", f"agent{i + 1}") for i in range(100_000))
    assert run.feed(events) == []
    assert len(run.state.chain) <= 16 and len(run.state.cycles) <= 64


def test_agents_are_named_as_they_name_themselves_not_as_a_tool_spells_them() -> None:
    """``transfer_to_billing_agent`` hands to ``billing_agent``; the agent calls itself
    ``billing-agent``, and that is the name the signal shows (also after a reload)."""
    run = Driver(HandoffCycleDetector)
    ping_pong = [
        handoff("triage-agent", "billing_agent"),
        handoff("billing-agent", "triage_agent"),
    ]
    run.feed(ping_pong + ping_pong[:1])
    run.reload()
    (signal,) = run.feed(ping_pong[1:])
    assert signal.evidence["agents"] == ["billing-agent", "triage-agent"]
    assert signal.message == (
        "handoff cycle billing-agent → triage-agent → billing-agent closed 2 times"
    )


def test_a_target_seen_only_through_a_tool_keeps_the_tools_spelling() -> None:
    run = Driver(HandoffCycleDetector)
    (signal,) = run.feed([handoff("Router", "worker_agent"), handoff(None, "router")] * 2)
    assert signal.evidence["agents"] == ["Router", "worker_agent"]
