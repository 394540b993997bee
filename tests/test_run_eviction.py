"""Bounded run table: LRU cap and idle TTL; evicted runs start fresh and never raise."""

from __future__ import annotations

from monitor_doubles import CountingDetector, FakeClock, call

from otel_loopguard import Monitor
from otel_loopguard.engine.config import LoopGuardConfig


def make(clock: FakeClock | None = None, **settings) -> Monitor:
    return Monitor(
        LoopGuardConfig(**settings), detectors=[CountingDetector()], clock=clock or FakeClock()
    )


def events(monitor: Monitor, run_id: str) -> int | None:
    summary = monitor.run_snapshot(run_id)
    return None if summary is None else summary.counters.events


def test_lru_cap_evicts_the_least_recently_used_run() -> None:
    monitor = make(max_runs=3)
    for run_id in ("a", "b", "c"):
        monitor.observe(call(run_id))
    monitor.observe(call("a"))  # a is now the most recently used; b the least
    monitor.observe(call("d"))
    assert monitor.active_runs == 3
    assert events(monitor, "b") is None
    assert (events(monitor, "a"), events(monitor, "c"), events(monitor, "d")) == (2, 1, 1)
    assert monitor.evicted_runs == 1


def test_an_evicted_run_starts_fresh_and_never_raises() -> None:
    monitor = make(max_runs=2)
    for _ in range(5):
        monitor.observe(call("a"))
    monitor.observe(call("b"))
    monitor.observe(call("c"))  # evicts a
    decision = monitor.observe(call("a"))
    assert decision.run_id == "a"
    assert events(monitor, "a") == 1
    assert monitor.export_run("a")["detectors"]["counting"] == {"events": 1}
    assert monitor.internal_errors == 0


def test_preflight_and_snapshot_do_not_leak_past_the_cap() -> None:
    monitor = make(max_runs=10)
    for n in range(1000):
        monitor.observe(call(f"run-{n}"))
        monitor.preflight(f"pre-{n}")
    assert monitor.active_runs == 10
    assert len(monitor._runs) == 10


def test_idle_runs_expire_after_the_ttl() -> None:
    clock = FakeClock()
    monitor = make(clock, run_ttl=60)
    monitor.observe(call("idle"))
    clock.advance(30)
    monitor.observe(call("busy"))
    clock.advance(31)  # idle: 61 s without events; busy: 31 s
    assert monitor.active_runs == 1
    assert events(monitor, "idle") is None and events(monitor, "busy") == 1


def test_an_expired_run_restarts_on_its_next_event_even_without_a_sweep() -> None:
    clock = FakeClock()
    monitor = make(clock, run_ttl=60)
    for _ in range(3):
        monitor.observe(call("r"))
    clock.advance(61)
    monitor.observe(call("r"))
    assert events(monitor, "r") == 1


def test_activity_keeps_a_run_alive_past_the_ttl() -> None:
    clock = FakeClock()
    monitor = make(clock, run_ttl=60)
    for _ in range(10):
        monitor.observe(call("r"))
        clock.advance(50)
    assert events(monitor, "r") == 10


def test_observing_other_runs_sweeps_expired_ones() -> None:
    clock = FakeClock()
    monitor = make(clock, run_ttl=10)
    for n in range(20):
        monitor.observe(call(f"old-{n}"))
    clock.advance(11)
    monitor.observe(call("new"))  # creating a run sweeps a few of the oldest
    assert 0 < monitor.evicted_runs < 20
    for _ in range(64):  # and so does every 64th event
        monitor.observe(call("new"))
    assert len(monitor._runs) == 1 and monitor.evicted_runs == 20
