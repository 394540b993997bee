"""Cosmetic variation is repetition without progress (issue 18, point 6).

Real agents were seen running the same shell command hundreds of times with only a display
counter in the arguments changing (``"description": "noop17"``), the output identical every
time, and rewording a query that keeps returning the same empty result. Both must reach
STOP with the no-progress evidence. Their nearest legitimate twins must not: distinct
queries that happen to find nothing, reworded queries whose answers change, pages behind
opaque cursors, the same command whose output changes, and a description that is the work.
Under the real monitor and default policy, one model turn per call.
"""

from __future__ import annotations

from scripted_runs import Driver, Step, exchange, turns

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Action, Decision
from otel_loopguard.engine.detectors.repetition import RepetitionDetector
from otel_loopguard.engine.monitor import Monitor


def _decisions(steps: list[Step]) -> list[Decision]:
    monitor = Monitor(LoopGuardConfig())
    return [monitor.observe(event) for event in turns(steps)]


def _first_stop(steps: list[Step]) -> Decision | None:
    return next((d for d in _decisions(steps) if d.action is Action.STOP), None)


def _worst(steps: list[Step]) -> Action:
    return max((d.action for d in _decisions(steps)), default=Action.CONTINUE)


def test_the_same_command_with_a_display_counter_is_stopped() -> None:
    steps: list[Step] = [
        ("Bash", {"command": "true", "description": f"noop{i}"}, "") for i in range(1, 40)
    ]
    stop = _first_stop(steps)
    assert stop is not None, "the same command, the same output, 39 times"
    evidence = [s.evidence for s in stop.reasons if s.detector == "repetition"]
    assert evidence and evidence[0]["unchanged_outputs"] >= 2
    # as early as exact repeats (issue 28, family 7): the third answer, not the fourth
    assert Action.STOP not in {d.action for d in _decisions(steps[:2])}
    assert Action.STOP in {d.action for d in _decisions(steps[:3])}


PARAPHRASES = [
    "pricing plans for teams",
    "Teams pricing plans",
    "plans pricing, for the team?",
    "please find the pricing plans for teams",
    "team pricing plan",
]


def test_reworded_queries_with_the_same_empty_result_are_stopped() -> None:
    steps: list[Step] = [("search", {"query": q}, {"results": []}) for q in PARAPHRASES]
    stop = _first_stop(steps)
    assert stop is not None and stop.reasons[0].kind == "near_duplicate"
    assert stop.reasons[0].evidence["unchanged_outputs"] >= 2


def test_distinct_queries_that_find_nothing_are_not_stopped() -> None:
    queries = ["pricing plans", "refund policy", "api rate limits", "sso setup", "data export"]
    steps: list[Step] = [("search", {"query": q}, {"results": []}) for q in queries]
    assert _worst(steps) < Action.STOP


def test_reworded_queries_whose_answers_change_are_not_stopped() -> None:
    steps: list[Step] = [
        ("search", {"query": q}, {"results": [f"doc-{i}"]}) for i, q in enumerate(PARAPHRASES)
    ]
    assert _worst(steps) < Action.STOP


def test_pages_behind_opaque_cursors_are_not_stopped() -> None:
    steps: list[Step] = [
        ("list_orders", {"cursor": f"eyJpZCI6{i * 7919:x}fQ", "limit": 50}, {"orders": []})
        for i in range(8)
    ]
    assert _worst(steps) < Action.STOP


def test_the_same_command_whose_output_changes_is_not_stopped() -> None:
    steps: list[Step] = [
        ("Bash", {"command": "gh run view 7", "description": f"check {i}"}, f"step {i} of 9")
        for i in range(9)
    ]
    assert _worst(steps) < Action.STOP


def test_a_description_that_is_the_work_is_not_cosmetic() -> None:
    steps: list[Step] = [
        ("create_ticket", {"title": "Flaky test", "description": f"seen in build {i}"}, "ok")
        for i in range(6)
    ]
    assert _worst(steps) < Action.STOP


def test_rewording_while_other_work_progresses_is_not_stopped() -> None:
    steps: list[Step] = []
    for i, query in enumerate(PARAPHRASES):
        steps.append(("search", {"query": query}, {"results": []}))
        steps.append(("job_status", {"job": "build-7"}, f"{i * 20}% done"))
    assert _worst(steps) < Action.STOP


def test_followed_answers_survive_a_reload() -> None:
    """A reloaded conversation (state exported to JSON and restored) goes on counting."""
    driver = Driver(RepetitionDetector)
    steps = [exchange("search", {"query": q}, "no results") for q in PARAPHRASES[:3]]
    for step in steps[:2]:
        driver.feed(step)
    driver.reload()
    fired = [s for step in steps[2:] for s in driver.feed(step)]
    fired += driver.feed(exchange("search", {"query": PARAPHRASES[3]}, "no results"))
    unchanged = [s.evidence.get("unchanged_outputs") for s in fired if s.kind == "near_duplicate"]
    assert [n for n in unchanged if n] == [2, 3]  # the third answer, then the fourth


def test_distinct_reads_of_files_with_the_same_content_are_not_stopped() -> None:
    steps: list[Step] = [
        ("Read", {"file_path": f"src/pkg{i}/__init__.py", "description": "read it"}, "")
        for i in range(12)
    ]
    assert _worst(steps) < Action.STOP
