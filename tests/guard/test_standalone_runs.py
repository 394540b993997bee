"""A gated tool with no ``agent_run`` is guarded the same way with and without an SDK.

``@loopguard_tool`` called in a loop with nothing around it: without an SDK its spans carry
no ids; with an SDK provider every call is the root of a trace of its own. Either way, calls
outside any run and outside any parent span, in one thread or asyncio task, are one run
until an idle gap, so the third identical call stops the loop. Each case runs as a program
of its own (the SDK setup is the case), as docs/python-api.md shows it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from otel_loopguard_testing import run_under_opentelemetry_instrument

_PROGRAM = r"""
import asyncio, json, sys, threading, time

from opentelemetry import trace

setup = sys.argv[1]
if setup == "sdk":  # docs/python-api.md, "The span processor"
    from opentelemetry.sdk.trace import TracerProvider
    from otel_loopguard import LoopGuardSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(LoopGuardSpanProcessor())
    trace.set_tracer_provider(provider)

from otel_loopguard import LoopGuardInterrupt, loopguard_tool, tool_span

executed = {}


@loopguard_tool
def search(query):
    executed[query] = executed.get(query, 0) + 1
    return "no results"


@loopguard_tool
async def asearch(query):
    executed[query] = executed.get(query, 0) + 1
    await asyncio.sleep(0)
    return "no results"


def loop(query, times=20):
    try:
        for _ in range(times):
            search(query)
    except LoopGuardInterrupt:
        return "interrupted"
    return "completed"


outcome = {}
scenario = sys.argv[2]
if scenario == "loop":
    outcome["loop"] = loop("pricing")
    try:
        with tool_span("shell", {"cmd": "ls"}) as call:  # the same run: vetoed
            call.set_result("x")
        outcome["after"] = "ran"
    except LoopGuardInterrupt:
        outcome["after"] = "vetoed"
elif scenario == "threads":  # each thread its own run: two calls each never repeat thrice
    def two(query):
        for _ in range(2):
            search(query)
            time.sleep(0.01)
    threads = [threading.Thread(target=two, args=("same",)) for _ in range(3)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    outcome["main"] = loop("main")
elif scenario == "tasks":
    async def agent(query, times):
        try:
            for i in range(times):
                await asearch(query if query == "pricing" else f"{query} {i}")
        except LoopGuardInterrupt:
            return "interrupted"
        return "completed"

    async def main():
        return await asyncio.gather(agent("pricing", 20), agent("topic", 20))

    outcome["looping"], outcome["healthy"] = asyncio.run(main())
outcome["executed"] = executed
print(json.dumps(outcome))
"""


def run_program(tmp_path: Path, setup: str, scenario: str, **env: str) -> dict:
    script = tmp_path / "agent.py"
    script.write_text(_PROGRAM)
    done = subprocess.run(
        [sys.executable, str(script), setup, scenario],
        capture_output=True,
        text=True,
        timeout=120,
        env={"OTEL_LOOPGUARD_MODE": "enforce", "PATH": "/usr/bin:/bin", **env},
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("setup", ["no-sdk", "sdk"])
def test_a_loop_with_no_agent_run_is_stopped_with_or_without_an_sdk(
    tmp_path: Path, setup: str
) -> None:
    outcome = run_program(tmp_path, setup, "loop")
    assert outcome["loop"] == "interrupted"
    assert outcome["executed"]["pricing"] == 3  # of 20
    assert outcome["after"] == "vetoed"  # the stopped run goes on being vetoed


@pytest.mark.parametrize("setup", ["no-sdk", "sdk"])
def test_threads_and_tasks_are_runs_of_their_own(tmp_path: Path, setup: str) -> None:
    outcome = run_program(tmp_path, setup, "threads")
    assert outcome["executed"]["same"] == 6  # three threads, two calls each: no loop
    assert outcome["main"] == "interrupted" and outcome["executed"]["main"] == 3

    outcome = run_program(tmp_path, setup, "tasks")
    assert outcome["looping"] == "interrupted" and outcome["executed"]["pricing"] == 3
    assert outcome["healthy"] == "completed"


def test_an_idle_gap_starts_a_new_run(tmp_path: Path) -> None:
    """With a gap of 0 every call outside a run is a run of its own (the loop is not seen)."""
    outcome = run_program(tmp_path, "sdk", "loop", OTEL_LOOPGUARD_STANDALONE_IDLE_GAP="0")
    assert outcome["loop"] == "completed" and outcome["executed"]["pricing"] == 20


def test_the_idle_gap_splits_runs_in_one_thread() -> None:
    from otel_loopguard.guard.standalone_runs import StandaloneRuns

    now = [0.0]
    runs = StandaloneRuns(300.0, clock=lambda: now[0])
    first = runs.identity()
    now[0] = 299.0
    assert runs.identity() == first  # each call keeps the run alive
    now[0] = 598.0
    assert runs.identity() == first
    now[0] = 899.0
    later = runs.identity()
    assert later != first and later.keyed_by == "standalone"


def test_under_opentelemetry_instrument(tmp_path: Path) -> None:
    """The same loop under the real opentelemetry-instrument (an SDK provider from the
    distro): stopped at the third identical call."""
    script = tmp_path / "agent.py"
    script.write_text(_PROGRAM)
    completed = run_under_opentelemetry_instrument(
        script, script_args=("no-sdk", "loop"), env={"OTEL_LOOPGUARD_MODE": "enforce"}
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    outcome = json.loads(
        next(line for line in completed.stdout.splitlines() if line.startswith('{"loop"'))
    )
    assert outcome["loop"] == "interrupted" and outcome["executed"]["pricing"] == 3
