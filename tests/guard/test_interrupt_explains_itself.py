"""An interrupt explains itself: one WARNING line of the ``otel_loopguard`` logger when a
STOP interrupts a run (run, agent, tool, detectors, reason, what it saved), and the
exception's message reads well ("1 tool call", never "1 tool calls")."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from otel_loopguard import (
    LoopGuard,
    LoopGuardConfig,
    LoopGuardInterrupt,
    agent_run,
    loopguard_tool,
    set_guard,
)
from otel_loopguard.engine.interrupt import readable

executed: list[str] = []


@loopguard_tool
def search(query: str) -> str:
    executed.append(query)
    return "no results"


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    executed.clear()
    previous = set_guard(None)
    yield
    set_guard(previous)


def interrupt_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == "otel_loopguard" and "interrupted run" in record.getMessage()
    ]


def run_agent(*queries: str, again: bool = False) -> LoopGuardInterrupt | None:
    """The agent calls ``search`` for each query; ``again``: it catches the interrupt and
    calls once more (vetoed: the run is stopped)."""
    caught = None
    with agent_run("researcher"):
        for query in queries:
            try:
                search(query)
            except LoopGuardInterrupt as interrupt:
                caught = interrupt
                if not again:
                    break
    return caught


def test_a_stop_that_interrupts_says_so_once_with_what_and_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    set_guard(LoopGuard(LoopGuardConfig(mode="enforce")))
    with caplog.at_level(logging.WARNING, logger="otel_loopguard"):
        interrupt = run_agent(*["pricing"] * 6, again=True)
    assert interrupt is not None and len(executed) == 3
    (line,) = interrupt_lines(caplog)  # the vetoed calls after it say nothing more
    record = next(r for r in caplog.records if "interrupted run" in r.getMessage())
    assert record.levelno == logging.WARNING
    assert str(interrupt.decision.run_id) in line
    assert "agent researcher" in line and "tool search" in line
    assert "repetition" in line and "search called 3 times" in line
    assert "after 3 tool calls" in line
    assert "saved: every later call of this run" in line
    assert "\n" not in line


def test_a_vetoed_call_says_it_did_not_run_and_counts_read_well(
    caplog: pytest.LogCaptureFixture,
) -> None:
    set_guard(LoopGuard(LoopGuardConfig(mode="enforce", max_tool_calls=1)))
    with caplog.at_level(logging.WARNING, logger="otel_loopguard"):
        interrupt = run_agent("a", "b", "c")
    assert interrupt is not None and executed == ["a"]
    message = str(interrupt)
    assert "limit of 1 tool call (" in message and "1 tool calls" not in message
    (line,) = interrupt_lines(caplog)
    assert "budget" in line and "after 1 tool call)" in line
    assert "saved: this search call and every later call of this run" in line


def test_observe_mode_interrupts_nothing_and_says_no_interrupt(
    caplog: pytest.LogCaptureFixture,
) -> None:
    set_guard(LoopGuard(LoopGuardConfig(mode="observe")))
    with caplog.at_level(logging.WARNING, logger="otel_loopguard"):
        assert run_agent(*["pricing"] * 6) is None
    assert len(executed) == 6 and not interrupt_lines(caplog)


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("limit of 1 tool calls (used 1)", "limit of 1 tool call (used 1)"),
        ("search failed 1 times with the same error", "search failed once with the same error"),
        ("1 model turns in a row", "1 model turn in a row"),
        (
            "search called 11 times; 21 calls; 1.1 seconds",
            "search called 11 times; 21 calls; 1.1 seconds",
        ),
    ],
)
def test_counts_of_one_read_as_singular(written: str, read: str) -> None:
    assert readable(written) == read
