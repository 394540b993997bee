"""Waiting is not looping (issue 18, point 5): polls between waits get ``POLL_PATIENCE``.

An agent that polls a CI run with a ``sleep`` between polls and sees ``in_progress`` four
times, then success, is not stuck. Polls with no wait in between, and waiting past the
patience, still are.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scripted_runs import Driver, exchange

from otel_loopguard.analyze.readers import read_spans
from otel_loopguard.analyze.replay import Replayer, RunRecord
from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Action
from otel_loopguard.engine.detectors.no_progress import NoProgressDetector
from otel_loopguard.engine.detectors.waiting import command_sleeps, is_wait_tool
from otel_loopguard.engine.monitor import Monitor

POLL = ("gh_run_view", {"run": 4711})


def ci_polls(waits: list, outputs: list[str]) -> list:
    """A poll per output, each after the events of ``waits`` (a wait between polls)."""
    events = []
    for output in outputs:
        for wait in waits:
            events += wait
        events += exchange(*POLL, output)
    return events


SLEEP = exchange("sleep", {"seconds": 30}, "")
SHELL_SLEEP = exchange("bash", {"command": "sleep 30"}, "")


@pytest.mark.parametrize("wait", [SLEEP, SHELL_SLEEP], ids=["sleep tool", "shell sleep"])
def test_polls_between_waits_are_not_no_progress(wait: list) -> None:
    run = Driver(NoProgressDetector)
    assert run.feed(ci_polls([wait], ["in_progress"] * 4 + ["success"])) == []


def test_a_wait_tool_of_the_agents_own_name_is_configured_by_its_variable() -> None:
    """``check_later`` waits before it answers, but its name does not say so: polls
    between its calls are no progress as shipped, and get the patience once it is named in
    ``OTEL_LOOPGUARD_WAIT_TOOLS``."""
    wait = exchange("check_later", {"minutes": 1}, "ok")
    polls = ci_polls([wait], ["in_progress"] * 4 + ["success"])
    configured = LoopGuardConfig.from_env({"OTEL_LOOPGUARD_WAIT_TOOLS": "check_later"})

    assert Driver(NoProgressDetector).feed(polls) != []
    assert Driver(NoProgressDetector, wait_tools=configured.wait_tools).feed(polls) == []


def test_the_same_polls_without_waiting_are_no_progress() -> None:
    run = Driver(NoProgressDetector)
    (signal,) = run.feed(ci_polls([], ["in_progress"] * 3))
    assert signal.evidence["repeats"] == 2 and "waited" not in signal.evidence


def test_waiting_past_the_patience_is_no_progress() -> None:
    run = Driver(NoProgressDetector, poll_patience=5)
    signals = run.feed(ci_polls([SLEEP], ["in_progress"] * 7))
    assert [s.evidence["repeats"] for s in signals if s.evidence["tool"] == POLL[0]] == [5, 6]
    assert signals[0].evidence["waited"] is True and signals[0].evidence["threshold"] == 5


def test_a_poll_that_sleeps_itself_gets_the_patience() -> None:
    run = Driver(NoProgressDetector)
    events = [
        e for _ in range(6) for e in exchange("bash", {"command": "sleep 20; gh run view"}, "q")
    ]
    assert run.feed(events) == []


def test_real_time_passing_between_polls_is_waiting() -> None:
    run = Driver(NoProgressDetector)
    signals = []
    for n in range(5):
        for event in exchange(*POLL, "in_progress"):
            run.counters.now = 60.0 * n  # a minute between polls, no wait call
            signals += run.feed([event])
    assert signals == []
    for event in exchange(*POLL, "in_progress"):  # polled again at once
        signals += run.feed([event])
    assert len(signals) == 1


def test_waits_survive_export_and_restore() -> None:
    run = Driver(NoProgressDetector)
    run.feed(ci_polls([SLEEP], ["in_progress"] * 2))
    run.reload()
    assert run.feed(SLEEP + exchange(*POLL, "in_progress")) == []


@pytest.mark.parametrize(
    ("name", "waits"),
    [
        ("sleep", True),
        ("wait_for_run", True),
        ("waitForCi", True),
        ("time.sleep", True),
        ("delay", True),
        ("waiter_status", False),
        ("get_wait_list", False),
        ("read_file", False),
    ],
)
def test_wait_tools_by_name(name: str, waits: bool) -> None:
    assert is_wait_tool(name) is waits


@pytest.mark.parametrize(
    ("arguments", "sleeps"),
    [
        ({"command": "sleep 30"}, True),
        ({"command": "gh run view 1 || (sleep 5 && gh run view 1)"}, True),
        ({"cmd": ["bash", "-c", "sleep 10"]}, True),
        ("Start-Sleep -Seconds 5", True),
        ({"command": "timeout /t 30"}, True),
        ({"command": "grep -r sleep src/"}, False),
        ({"command": "pytest -q"}, False),
        ({"path": "sleep 30"}, False),
    ],
)
def test_shell_commands_that_sleep(arguments, sleeps: bool) -> None:
    assert command_sleeps(arguments) is sleeps


def test_monitor_polling_ci_between_sleeps_is_never_stopped() -> None:
    monitor = Monitor(LoopGuardConfig())
    decided = [monitor.observe(e).action for e in ci_polls([SLEEP], ["in_progress"] * 4)]
    decided += [monitor.observe(e).action for e in exchange(*POLL, "success")]
    assert Action.STOP not in decided


def test_monitor_polling_without_waiting_is_stopped() -> None:
    monitor = Monitor(LoopGuardConfig())
    decided = [monitor.observe(e).action for e in ci_polls([], ["in_progress"] * 4)]
    assert Action.STOP in decided


def _ci_trace(tmp_path: Path, seconds_between: int) -> Path:
    """A replayed OTLP trace of an agent polling CI, ``seconds_between`` polls (span time)."""
    from opentelemetry import trace as trace_api

    from tests.analyze.traces import Recorder, write_otlp

    recorder = Recorder()
    tracer = recorder.tracer
    base = 1_700_000_000 * 10**9
    agent = tracer.start_span(
        "invoke_agent ci",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "ci"},
        start_time=base,
    )
    context = trace_api.set_span_in_context(agent)
    at = base
    for output in ["in_progress"] * 5:
        at += seconds_between * 10**9
        tool = tracer.start_span(
            "execute_tool gh_run_view",
            context=context,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": POLL[0],
                "gen_ai.tool.call.arguments": json.dumps(POLL[1]),
                "gen_ai.tool.call.result": output,
            },
            start_time=at,
        )
        tool.end(end_time=at + 10**8)
    agent.end(end_time=at + 10**9)
    return write_otlp(tmp_path / "ci.json", recorder.spans())


def _replayed(path: Path) -> RunRecord:
    runs: list[RunRecord] = []
    replayer = Replayer(LoopGuardConfig(), runs.append)
    replayer.feed(read_spans([str(path)]))
    replayer.finish()
    (run,) = runs
    return run


def test_replay_polls_a_minute_apart_are_not_stopped(tmp_path: Path) -> None:
    assert _replayed(_ci_trace(tmp_path, 60)).first_stop is None


def test_replay_polls_a_second_apart_are_stopped(tmp_path: Path) -> None:
    assert _replayed(_ci_trace(tmp_path, 1)).first_stop is not None
