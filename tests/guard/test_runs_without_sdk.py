"""Every ``agent_run`` is its own run, with an OpenTelemetry SDK or without one.

Without an SDK tracer provider the spans are non-recording and carry no ids (all zeros);
two hand-written agents running at once must still keep their runs apart: the looping one
is interrupted, the healthy one completes. Each case runs in a process of its own that
never configures an SDK (the test session's own providers would hide the case).
"""

from __future__ import annotations

import json
import subprocess
import sys

_PROGRAM = r"""
import asyncio, json, sys, threading, time

from opentelemetry import trace
from otel_loopguard import (
    LoopGuard, LoopGuardConfig, LoopGuardInterrupt, agent_run, loopguard_tool, set_guard,
)

assert type(trace.get_tracer_provider()).__name__ == "ProxyTracerProvider"  # no SDK here
set_guard(LoopGuard(LoopGuardConfig(mode="enforce")))
executed = {"looping": 0, "healthy": 0}


@loopguard_tool
def search(agent: str, query: str) -> str:
    executed[agent] += 1
    return "no results" if agent == "looping" else f"3 results for {query}"


@loopguard_tool
async def asearch(agent: str, query: str) -> str:
    executed[agent] += 1
    return "no results" if agent == "looping" else f"3 results for {query}"


def query(agent, i):
    return "pricing" if agent == "looping" else f"topic {i}"


def threaded(agent, barrier, outcomes):
    barrier.wait()
    try:
        with agent_run(agent):
            for i in range(8):
                search(agent, query(agent, i))
                time.sleep(0.005)  # the other agent's calls come in between
        outcomes[agent] = "completed"
    except LoopGuardInterrupt:
        outcomes[agent] = "interrupted"


async def in_task(agent, outcomes):
    try:
        with agent_run(agent):
            for i in range(8):
                await asearch(agent, query(agent, i))
                await asyncio.sleep(0)  # the other task's calls come in between
        outcomes[agent] = "completed"
    except LoopGuardInterrupt:
        outcomes[agent] = "interrupted"


outcomes = {}
if sys.argv[1] == "threads":
    barrier = threading.Barrier(2)
    workers = [threading.Thread(target=threaded, args=(a, barrier, outcomes)) for a in executed]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
else:
    async def main():
        await asyncio.gather(*(in_task(agent, outcomes) for agent in executed))
    asyncio.run(main())
print(json.dumps({"outcomes": outcomes, "executed": executed}))
"""


def _run(mode: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", _PROGRAM, mode],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PATH": "/usr/bin:/bin", "OTEL_SDK_DISABLED": "true"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_two_agents_in_two_threads_without_an_sdk_keep_their_runs_apart() -> None:
    result = _run("threads")
    assert result["outcomes"] == {"looping": "interrupted", "healthy": "completed"}
    assert result["executed"]["healthy"] == 8
    assert result["executed"]["looping"] < 8  # stopped before it ran all its calls


def test_two_agents_in_two_asyncio_tasks_without_an_sdk_keep_their_runs_apart() -> None:
    result = _run("tasks")
    assert result["outcomes"] == {"looping": "interrupted", "healthy": "completed"}
    assert result["executed"]["healthy"] == 8
    assert result["executed"]["looping"] < 8
