"""Many threads and asyncio tasks over many runs: exact counts, no lost events."""

from __future__ import annotations

import asyncio
import threading

from monitor_doubles import CountingDetector, call, llm, result
from otel_loopguard_testing import run_in_threads

from otel_loopguard import Monitor
from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.detectors.base import build_default_detectors

THREADS = 16
RUNS = 64
ROUNDS = 20  # per run and thread: one tool call, one result, one model response


def assert_exact_counts(monitor: Monitor, writers: int, runs: int = RUNS) -> None:
    assert monitor.active_runs == runs
    for index in range(runs):
        summary = monitor.run_snapshot(f"run-{index}")
        counters = summary.counters
        assert counters.events == writers * ROUNDS * 3
        assert counters.tool_calls == writers * ROUNDS
        assert counters.steps == writers * ROUNDS
        assert counters.input_tokens == writers * ROUNDS * 7
        export = monitor.export_run(f"run-{index}")
        assert export["detectors"]["counting"] == {"events": writers * ROUNDS * 3}
    assert monitor.internal_errors == 0


def test_threads_sharing_runs_lose_no_event() -> None:
    monitor = Monitor(LoopGuardConfig(), detectors=[CountingDetector()])
    barrier = threading.Barrier(THREADS)

    def worker(offset: int) -> None:
        barrier.wait()
        for round_ in range(ROUNDS):
            for index in range(RUNS):
                run_id = f"run-{(index + offset) % RUNS}"  # every thread writes every run
                monitor.observe(call(run_id, f"tool:x({round_})"))
                monitor.observe(result(run_id))
                monitor.observe(llm(run_id, input_tokens=7))

    run_in_threads(worker, range(THREADS))
    assert_exact_counts(monitor, THREADS)


def test_threads_with_runs_created_and_ended_concurrently() -> None:
    """Run creation, end and LRU touch race on the table; each run's own count stays exact."""
    monitor = Monitor(LoopGuardConfig(), detectors=[CountingDetector()])
    summaries: list = []
    lock = threading.Lock()

    def worker(thread: int) -> None:
        for n in range(30):
            run_id = f"t{thread}-{n}"
            for _ in range(10):
                monitor.observe(call(run_id))
            summary = monitor.end_run(run_id)
            with lock:
                summaries.append(summary)

    run_in_threads(worker, range(THREADS))
    assert len(summaries) == THREADS * 30
    assert all(s.counters.events == 10 and s.counters.tool_calls == 10 for s in summaries)
    assert monitor.active_runs == 0 and monitor.internal_errors == 0


def test_default_detectors_under_threads_raise_nothing() -> None:
    config = LoopGuardConfig(policy="observe")
    monitor = Monitor(config, detectors=[*build_default_detectors(config), CountingDetector()])

    def worker(offset: int) -> None:
        for round_ in range(ROUNDS):
            for index in range(RUNS):
                run_id = f"run-{(index + offset) % RUNS}"
                monitor.observe(call(run_id, f"tool:x({round_ % 3})"))
                monitor.observe(result(run_id, f"result:{round_ % 2}"))
                monitor.observe(llm(run_id, input_tokens=7))

    run_in_threads(worker, range(4))
    assert_exact_counts(monitor, 4)


def test_asyncio_tasks_interleaving_runs_lose_no_event() -> None:
    monitor = Monitor(LoopGuardConfig(), detectors=[CountingDetector()])

    runs = 16

    async def agent(offset: int) -> None:
        for round_ in range(ROUNDS):
            for index in range(runs):
                run_id = f"run-{(index + offset) % runs}"
                monitor.observe(call(run_id, f"tool:x({round_})"))
                await asyncio.sleep(0)
                monitor.observe(result(run_id))
                await asyncio.sleep(0)
                monitor.observe(llm(run_id, input_tokens=7))

    async def main() -> None:
        await asyncio.gather(*(agent(n) for n in range(THREADS)))

    asyncio.run(main())
    assert_exact_counts(monitor, THREADS, runs)


def test_asyncio_loops_in_several_threads() -> None:
    monitor = Monitor(LoopGuardConfig(), detectors=[CountingDetector()])

    async def agent(offset: int) -> None:
        for round_ in range(ROUNDS):
            for index in range(RUNS):
                run_id = f"run-{(index + offset) % RUNS}"
                monitor.observe(call(run_id, f"tool:x({round_})"))
                monitor.observe(result(run_id))
                await asyncio.sleep(0)
                monitor.observe(llm(run_id, input_tokens=7))

    def thread_main(first: int) -> None:
        async def main() -> None:
            await asyncio.gather(agent(first), agent(first + 1))

        asyncio.run(main())

    run_in_threads(thread_main, range(0, 8, 2))
    assert_exact_counts(monitor, 8)


def test_racing_stops_are_decided_and_announced_once_per_run() -> None:
    """Threads hit the same runs with stopping events at once: one STOP per run, shared."""
    from monitor_doubles import SignatureTrigger

    monitor = Monitor(
        LoopGuardConfig(), detectors=[SignatureTrigger("tool:stop()", "handoff_cycle")]
    )
    announced: list[str] = []
    lock = threading.Lock()

    def listen(decision, event) -> None:
        with lock:
            announced.append(decision.run_id)

    monitor.add_decision_listener(listen)
    barrier = threading.Barrier(8)
    seen: dict[str, set[int]] = {f"run-{n}": set() for n in range(RUNS)}

    def worker(_thread: int) -> None:
        barrier.wait()
        for index in range(RUNS):
            run_id = f"run-{index}"
            decision = monitor.observe(call(run_id, "tool:stop()"))
            with lock:
                seen[run_id].add(id(decision))

    run_in_threads(worker, range(8))
    assert sorted(announced) == sorted(seen)  # each run's stop announced exactly once
    assert all(len(ids) == 1 for ids in seen.values())  # and every thread got that decision
    assert all(monitor.run_snapshot(run_id).counters.events == 8 for run_id in seen)
