"""The reference design's premature end-turn, with failure markers in tool output (issue 28,
family 6): a tool call that itself succeeded but whose output shows failing tests, a
traceback or a non-zero exit code is a failing call, so an empty end of turn right after
it is re-prompted (``replan`` with the "continue or explain" prompt), and the third empty
end in a row stops (``MAX_PREMATURE_END_RECOVERIES=2``). Before, only tool errors and
environmental shell failures counted, and an agent that gave up silently after ``pytest``
reported ``3 failed`` was taken to have finished.

Twins: an empty end after tests that passed (``12 passed``, ``OK``, exit code 0) is a
normal end; output that merely says "error" in prose (``0 errors``, a grep hit in a log,
a log file read) is no failure.
"""

from __future__ import annotations

import json

import pytest
from scripted_runs import RUN, exchange
from span_agent import DIALECTS, SpanAgent

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Action, Decision
from otel_loopguard.engine.detectors.output_failures import output_failure
from otel_loopguard.engine.detectors.premature_end import PrematureEndDetector
from otel_loopguard.engine.events import Event, EventKind
from otel_loopguard.engine.monitor import Monitor

PYTEST_FAILED = """\
============================= test session starts ==============================
collected 13 items

tests/test_cart.py ..F.......F.F                                          [100%]

=================================== FAILURES ===================================
___________________________ test_total_with_discount ___________________________

    def test_total_with_discount():
>       assert total([10, 20], discount=0.1) == 27
E       AssertionError: assert 30 == 27

tests/test_cart.py:14: AssertionError
=========================== short test summary info ============================
FAILED tests/test_cart.py::test_total_with_discount - AssertionError: assert 30 == 27
FAILED tests/test_cart.py::test_empty_cart - TypeError: 'NoneType' object is not iterable
FAILED tests/test_cart.py::test_rounding - assert 1.0 == 0.99
========================= 3 failed, 10 passed in 0.31s =========================
"""
PYTEST_PASSED = """\
============================= test session starts ==============================
collected 12 items

tests/test_cart.py ............                                           [100%]

============================== 12 passed in 0.22s ==============================
"""
UNITTEST_OK = "............\n" + "-" * 70 + "\nRan 12 tests in 0.004s\n\nOK\n"
GO_FAILED = (
    "--- FAIL: TestTotal (0.00s)\n    cart_test.go:12: got 30, want 27\n"
    "FAIL\nFAIL\texample.com/cart\t0.004s\n"
)
LOG_WITH_ERRORS = """\
2026-12-06 10:00:01 INFO  worker started
2026-12-06 10:00:02 ERROR payment gateway timeout, retrying
Traceback (most recent call last):
  File "worker.py", line 40, in charge
ConnectionError: gateway timeout
2026-12-06 10:00:05 INFO  retry succeeded
"""
PROSE = "Lint finished: 0 errors, 2 warnings. The error handling in checkout.py was rewritten."

TESTS = ("bash", {"command": "python -m pytest -q tests/test_cart.py"})


def empty_end() -> Event:
    return Event(EventKind.LLM_RESPONSE, RUN, finish_reason="stop", empty=True)


def asked(events: list[Event]) -> Event:
    return Event(EventKind.LLM_RESPONSE, RUN, requested_tool_calls=(events[0].signature,))


def run(steps: list[list[Event]], **settings: object) -> list[Decision]:
    """The real monitor's decision on the last event of each step."""
    monitor = Monitor(LoopGuardConfig(**settings))
    decisions = []
    for events in steps:
        decision = None
        for event in events:
            decision = monitor.observe(event)
        assert decision is not None
        decisions.append(decision)
    return decisions


def tool_then_ends(tool: str, arguments: dict, output: object, ends: int = 3) -> list[Decision]:
    """The model asks for one call, gets ``output``, then ends its turn empty ``ends``
    times (re-prompted in between, it gives up again)."""
    call = exchange(tool, arguments, output)
    return run([[asked(call), *call]] + [[empty_end()] for _ in range(ends)])[1:]


def test_failing_tests_then_an_empty_end_is_re_prompted_and_the_third_stops() -> None:
    first, second, third = tool_then_ends(*TESTS, PYTEST_FAILED)
    assert first.action is Action.REPLAN
    assert "bash: failing tests" in (first.recommendation or "")
    assert second.action is Action.REPLAN
    assert third.action is Action.STOP
    assert third.detectors == ("premature_end",)


@pytest.mark.parametrize(
    ("tool", "output", "what"),
    [
        ("run_tests", GO_FAILED, "failing tests"),
        ("run_tests", {"stdout": "building...\n", "exit_code": 2}, "exit code 2"),
        ("execute_python", "Traceback (most recent call last):\n  File ...\nKeyError: 'id'", ""),
        ("bash", "npm ERR! Test failed.\nExit code: 1\n", "non-zero exit code"),
    ],
)
def test_other_failure_shapes_get_the_re_prompt(tool: str, output: object, what: str) -> None:
    (decision,) = tool_then_ends(tool, {"command": "test"}, output, ends=1)
    assert decision.action is Action.REPLAN
    assert what in (decision.recommendation or "")


@pytest.mark.parametrize(
    ("tool", "output"),
    [
        ("bash", PYTEST_PASSED),
        ("bash", UNITTEST_OK),
        ("run_tests", {"stdout": "12 passed", "exit_code": 0}),
        ("bash", "Exit code: 0\nall checks passed\n"),
        ("read_file", LOG_WITH_ERRORS),  # file content, not an outcome
        ("lint", PROSE),
        ("bash", "app.log:2:2026-12-06 ERROR payment gateway timeout\n"),  # a grep hit
    ],
)
def test_an_empty_end_after_passing_or_merely_wordy_output_is_a_normal_end(
    tool: str, output: object
) -> None:
    decisions = tool_then_ends(tool, {"path": "x"}, output, ends=1)
    assert [d.action for d in decisions] == [Action.CONTINUE]


def test_an_answer_after_failing_tests_is_no_premature_end() -> None:
    call = exchange(*TESTS, PYTEST_FAILED)
    answer = Event(EventKind.LLM_RESPONSE, RUN, finish_reason="stop")
    (decision,) = run([[asked(call), *call, answer]])
    assert decision.action is Action.CONTINUE


def test_the_markers_are_a_setting() -> None:
    decisions = run(
        [[asked(c := exchange(*TESTS, PYTEST_FAILED)), *c], [empty_end()]],
        output_failure_markers=False,
    )
    assert decisions[-1].action is Action.CONTINUE


def test_the_verdict_survives_a_reload_between_the_tests_and_the_end() -> None:
    detector = PrematureEndDetector(LoopGuardConfig())
    state = detector.new_state()
    from otel_loopguard.engine.detectors.counters import RunCounters

    for event in exchange(*TESTS, PYTEST_FAILED):
        detector.observe(event, state, RunCounters())
    data = json.loads(json.dumps(detector.export_state(state)))
    assert "pending" not in data and PYTEST_FAILED not in json.dumps(data)  # no raw content
    restored = detector.restore_state(data)
    signal = detector.observe(empty_end(), restored, RunCounters())
    assert signal is not None and signal.kind == "recovery"


def test_a_huge_output_is_looked_at_by_its_head_and_tail_only() -> None:
    filler = "x" * 80 + "\n"
    huge = filler * 120_000  # about 10 MB
    assert output_failure(huge + "=== 1 failed in 3.2s ===\n") == "failing tests"
    assert output_failure("Traceback (most recent call last):\n" + huge) == "a traceback"
    assert output_failure(filler * 1000 + "FAIL: test_x (t.T)\n" + huge) is None  # the middle


# -- through the span processor, in two dialects --------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
def test_spans_failing_tests_then_empty_ends_replan_replan_stop(dialect: str) -> None:
    agent = SpanAgent(dialect)
    assert agent.tool(*TESTS, PYTEST_FAILED) == "continue"
    assert agent.chat() == "replan"
    assert "failing tests" in (agent.last().recommendation or "")
    assert agent.chat() == "replan"
    assert agent.chat() == "stop"


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(
    ("tool", "output"),
    [("bash", PYTEST_PASSED), ("grep", LOG_WITH_ERRORS), ("lint", PROSE)],
    ids=["tests passed", "grep hits", "prose"],
)
def test_spans_an_empty_end_after_passing_tests_or_prose_is_a_normal_end(
    dialect: str, tool: str, output: str
) -> None:
    agent = SpanAgent(dialect)
    assert agent.tool(tool, {"pattern": "ERROR"}, output) == "continue"
    assert agent.chat() == "continue"
    assert agent.decisions == []


@pytest.mark.parametrize("dialect", DIALECTS)
def test_spans_a_non_zero_exit_code_in_the_output_gets_the_re_prompt(dialect: str) -> None:
    agent = SpanAgent(dialect)
    agent.tool("run_command", {"command": "make test"}, "make: *** [test] Error 2\nExit code: 2")
    assert agent.chat() == "replan"
    # the agent runs the fixed tests, they pass: its empty end is a normal one
    agent.tool("run_command", {"command": "make test PYTEST_ARGS=-x"}, PYTEST_PASSED)
    assert agent.chat() == "continue"
