"""The call-level detectors under the real monitor and default policy: iteration goes on,
loops stop.

Each scenario is what an agent really does, fed as the span adapters feed it (a model turn
with its requested calls, then each tool call and its result). Iteration — polling whose
answer changes, retry-then-success, one tool over many arguments, edit → run tests → edit →
run tests — must never be stopped (the repeated test command may warn). Loops — the same
search with no results, a two-step cycle with unchanged answers, the same 404, agents handing
a task back and forth — must be stopped.
"""

from __future__ import annotations

import pytest
from scripted_runs import Step, handoff, worst_action

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Action
from otel_loopguard.engine.events import ErrorInfo
from otel_loopguard.engine.monitor import Monitor


def polling_with_progress() -> list[Step]:
    return [("job_status", {"job": "build-7"}, f"running, {pct}% done") for pct in range(0, 100, 8)]


def retry_then_success() -> list[Step]:
    timeout = ErrorInfo(type="TimeoutError", message="read timed out")
    steps: list[Step] = []
    for page in range(5):
        steps += [("fetch", {"url": f"/docs/{page}"}, timeout)] * 3
        steps += [("fetch", {"url": f"/docs/{page}"}, f"<h1>page {page}</h1>")]
    return steps


def one_tool_many_arguments() -> list[Step]:
    return [("read_file", {"path": f"src/module_{i}.py"}, "def main(): ...") for i in range(40)]


def edit_and_test() -> list[Step]:
    steps: list[Step] = []
    for attempt in range(8):
        steps.append(("edit_file", {"path": "app.py", "patch": f"fix attempt {attempt}"}, "ok"))
        steps.append(("bash", {"command": "pytest -q"}, "1 failed, 12 passed in 0.52s"))
    return steps


@pytest.mark.parametrize(
    "scenario", [polling_with_progress, retry_then_success, one_tool_many_arguments, edit_and_test]
)
def test_iteration_is_never_stopped(scenario) -> None:
    action, detectors = worst_action(scenario())
    assert action < Action.PAUSE, detectors
    if scenario is edit_and_test:  # the identical test command may warn, nothing more
        assert action <= Action.WARN and detectors <= {"repetition"}


def test_the_same_search_with_no_results_is_stopped() -> None:
    steps: list[Step] = [
        ("search", {"query": "pricing"}, f"no results (request {i:08x}a)") for i in range(5)
    ]
    action, detectors = worst_action(steps)
    assert action is Action.STOP and {"repetition", "no_progress"} <= detectors


def test_a_two_step_cycle_with_unchanged_answers_is_stopped() -> None:
    steps: list[Step] = [
        ("search", {"query": "refund policy"}, "see /help/refunds"),
        ("open_page", {"url": "/help/refunds"}, "404: page moved"),
    ] * 5
    action, detectors = worst_action(steps)
    assert action is Action.STOP and "action_cycle" in detectors


def test_the_same_permanent_error_is_stopped() -> None:
    not_found = ErrorInfo(type="HTTPError", message="Not Found", status_code=404)
    action, detectors = worst_action([("fetch", {"url": "/api/v1/users"}, not_found)] * 3)
    assert action is Action.STOP and detectors == {"permanent_failure"}


def test_agents_handing_a_task_back_and_forth_are_stopped() -> None:
    monitor = Monitor(LoopGuardConfig())
    actions = [
        monitor.observe(handoff(source, target)).action
        for source, target in [("triage", "billing"), ("billing", "triage")] * 3
    ]
    assert Action.STOP in actions and actions.index(Action.STOP) == 3  # the second closure
