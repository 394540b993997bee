"""Memory stays flat however many runs come and go, with ``OTEL_LOOPGUARD_MAX_RUNS=1000``.

Runs are created and finished (half end normally, half are abandoned and must be evicted by
the cap) while ``tracemalloc`` samples what is held; once the run table is full, what is
held must stop growing. In CI: 10,000 runs through the monitor (seconds) and 2,000
abandoned agent spans through the real span processor and SDK; with ``LOOPGUARD_SOAK=1``:
1,000,000 runs and 100,000 abandoned spans (minutes). The peak is printed (``pytest -s``)
and stated in docs/benchmarks.md.

Already proved elsewhere: the LRU cap and the TTL evict the right runs
(``tests/test_run_eviction.py``); one run's state stays bounded over 1,000,000 events
(``benchmarks/monitor_throughput.py``, window bound test in ``tests/test_monitor.py``).
"""

from __future__ import annotations

import gc
import os
import tracemalloc
from dataclasses import replace

from opentelemetry import trace
from otel.helpers import make_stack

from otel_loopguard import Monitor
from otel_loopguard.engine import events
from otel_loopguard.engine.config import LoopGuardConfig

SOAK = os.environ.get("LOOPGUARD_SOAK") == "1"
RUNS = 1_000_000 if SOAK else 10_000
ABANDONED_SPANS = 100_000 if SOAK else 2_000  # a multiple of 250
SAMPLES = 6
GROWTH_ALLOWED = 512 * 1024  # bytes: allocator noise, interned strings, not a leak per run


def _held() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def test_a_million_runs_come_and_go_in_flat_memory() -> None:
    config = LoopGuardConfig.from_env({"OTEL_LOOPGUARD_MAX_RUNS": "1000"})
    assert config.max_runs == 1000
    monitor = Monitor(config)
    # signatures are computed once: this test is about what runs leave behind, and signing
    # a million arguments would only make it slower (signature cost: test_hostile_input.py)
    calls = [events.tool_call("template", "search", {"query": f"topic {n}"}) for n in range(64)]
    results = [events.tool_result("template", "search", f"{n % 9} results") for n in range(64)]
    samples: list[int] = []
    tracemalloc.start()
    try:
        start = _held()
        for index in range(RUNS):
            run_id = f"session-{index}"
            monitor.observe(replace(calls[index % 64], run_id=run_id))
            monitor.observe(replace(results[index % 64], run_id=run_id))
            if index % 2:
                monitor.end_run(run_id)  # finished; the others are abandoned
            if (index + 1) % (RUNS // SAMPLES) == 0:
                samples.append(_held() - start)
                assert monitor.active_runs <= 1000
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    print(
        f"\n{RUNS:,} runs, max_runs=1000: held {samples[1] / 2**20:.2f} MiB after "
        f"{2 * RUNS // SAMPLES:,} runs, {samples[-1] / 2**20:.2f} MiB at the end, "
        f"peak {peak / 2**20:.2f} MiB"
    )
    assert monitor.evicted_runs >= RUNS // 2 - 1000  # abandoned runs were dropped by the cap
    # half the runs end, so the table is full after 2,000 runs (the second sample): from
    # there on nothing may accumulate per run
    assert max(samples[2:]) - samples[1] < GROWTH_ALLOWED, samples


def test_abandoned_agent_spans_through_the_processor_stay_bounded() -> None:
    """Agent spans that never end (a crashed worker, a leaked context) must not pile up."""
    stack = make_stack(max_runs=1000)
    tracer = stack.tracer
    samples: list[int] = []
    tracemalloc.start()
    try:
        start = _held()
        for index in range(ABANDONED_SPANS):
            agent = tracer.start_span(
                f"invoke_agent worker{index}", attributes={"gen_ai.operation.name": "invoke_agent"}
            )
            with tracer.start_as_current_span(
                "execute_tool search",
                context=trace.set_span_in_context(agent),
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "search",
                    "gen_ai.tool.call.arguments": f'{{"q": "topic {index}"}}',
                    "gen_ai.tool.call.result": "3 results",
                },
            ):
                pass
            del agent  # never ended
            # sampled once the run table and the trace table are full (1,000 each)
            if index + 1 >= 1500 and (index + 1) % 250 == 0:
                stack.exporter.clear()  # what the test keeps is not the guard's
                samples.append(_held() - start)
    finally:
        tracemalloc.stop()
    print(
        f"\n{ABANDONED_SPANS:,} abandoned runs: held {samples[0] / 1024:,.0f} KiB at 1,500, "
        f"{samples[-1] / 1024:,.0f} KiB at the end, at most {max(samples) / 1024:,.0f} KiB"
    )
    assert stack.guard.monitor.active_runs <= 1000
    assert len(stack.guard.follower) <= 1000
    assert stack.metric_total("loopguard.internal_errors") == 0
    assert max(samples[1:]) - samples[0] < GROWTH_ALLOWED, samples
