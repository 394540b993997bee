"""Progress is new information (issue 28, families 1, 5 and 7).

Loops where nothing repeats exactly: a search reworded each time, all empty; a plan tool
whose every call answers "Plan updated" while only its status flags change; overlapping
reads of one file at shifting offsets that surface no line the run has not read. Each is
answered first with a ``replan`` (the nudge), and, the nudge delivered (as a framework
package does in ``enforce`` mode), with a STOP at the next stale result: the ladder. Their
legitimate twins pass untouched: twenty recipients each answered ``{"success": true}``, a
plan tool between real work, distinct queries that find nothing, paging through a file.
Family 7: reworded calls answered alike stop at the same call as exact repeats.

Under the real monitor and default policy, one model turn per call (``turns``), and through
the real span processor in two dialects (OTel GenAI semconv, OpenInference).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from otel.helpers import make_stack
from scripted_runs import RUN, Driver, Step, exchange, turns
from sdk_stack import AGENT, SdkStack

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Action, Decision
from otel_loopguard.engine.detectors.stale_results import StaleResultsDetector
from otel_loopguard.engine.events import EventKind
from otel_loopguard.engine.monitor import Monitor

NAME = "no_new_information"


def _run(steps: list[Step], *, deliver: bool = True, **settings: Any) -> list[tuple[int, Decision]]:
    """(call number from 1, decision) of every non-continue decision on a tool result;
    with ``deliver``, each replan of the detector is delivered (``note_delivered``)."""
    monitor = Monitor(LoopGuardConfig(**settings))
    calls = 0
    decided: list[tuple[int, Decision]] = []
    for event in turns(steps):
        if event.kind is EventKind.TOOL_CALL:
            calls += 1
        decision = monitor.observe(event)
        if decision.action is Action.CONTINUE:
            continue
        decided.append((calls, decision))
        if decision.action is Action.STOP:
            break
        if deliver and decision.action is Action.REPLAN and NAME in decision.detectors:
            monitor.note_delivered(RUN, NAME)
    return decided


def _first(decided: list[tuple[int, Decision]], action: Action) -> int | None:
    return next((call for call, d in decided if d.action is action), None)


def _ours(decided: list[tuple[int, Decision]]) -> list[tuple[int, str]]:
    return [(call, d.action.value) for call, d in decided if NAME in d.detectors]


REWORDED = [
    "flights from Paris to Rome in May",
    "Paris Rome flights, May",
    "may flights paris to rome",
    "find flights Paris -> Rome (May)",
    "flights to Rome from Paris during May",
    "rome paris flight may",
]


def _reworded_but_different_answer_shape() -> list[Step]:
    # each wording answered "no flights found" with a different (masked) request id: the
    # answers are the same news, so only the first is new information
    return [
        ("search_flights", {"query": q, "cabin": "economy"}, {"flights": [], "note": "none"})
        for q in REWORDED
    ]


def test_a_search_reworded_each_time_all_empty_is_stopped() -> None:
    steps = _reworded_but_different_answer_shape()
    # paraphrases (one near-duplicate key): repetition stops them at the third answer, as
    # exact repeats (family 7)
    assert _first(_run(steps), Action.STOP) == 3
    # this detector alone: calls 2, 3, 4 bring nothing new, the nudge at the fourth answer,
    # the stop at the fifth, after the nudge was delivered
    decided = _run(steps, near_duplicate=False)
    assert _ours(decided)[:2] == [(4, "replan"), (5, "stop")]
    replan = next(d for _, d in decided if d.action is Action.REPLAN)
    assert replan.recommendation and "search_flights" in replan.recommendation


def test_the_nudge_then_stop_comes_from_this_detector_when_wording_varies_more() -> None:
    # wordings whose near keys differ (other words), all answered the same empty page
    queries = [
        "pricing plans for teams",
        "team plan prices",
        "pricing for a team plan",
        "what do team plans cost pricing",
        "plans and pricing teams",
    ]
    steps: list[Step] = [("search_docs", {"query": q}, {"results": []}) for q in queries]
    decided = _run(steps)
    assert _ours(decided)[:2] == [(4, "replan"), (5, "stop")]
    stop = decided[-1][1]
    assert stop.reasons[0].kind == "after_nudge"


def test_without_delivery_a_replan_stays_a_replan() -> None:
    queries = ["pricing plans for teams", "team plan prices", "pricing for a team plan"]
    queries += ["what do team plans cost pricing", "plans and pricing teams"]
    steps: list[Step] = [("search_docs", {"query": q}, {"results": []}) for q in queries]
    decided = _run(steps, deliver=False)
    assert _first(decided, Action.STOP) is None
    assert _ours(decided) == [(4, "replan"), (5, "replan")]


def _plan(statuses: list[str]) -> dict[str, Any]:
    steps = ["Inspect the failing test", "Find the bug in the parser", "Write the fix"]
    return {
        "explanation": "updating the plan",
        "plan": [{"step": s, "status": st} for s, st in zip(steps, statuses, strict=True)],
    }


PLAN_FLAGS = [
    ["in_progress", "pending", "pending"],
    ["completed", "in_progress", "pending"],
    ["in_progress", "in_progress", "pending"],
    ["completed", "pending", "in_progress"],
    ["pending", "in_progress", "pending"],
    ["completed", "completed", "in_progress"],
]


def test_a_plan_tool_answering_plan_updated_with_nothing_else_new_is_nudged_then_stopped() -> None:
    steps: list[Step] = [("update_plan", _plan(flags), "Plan updated") for flags in PLAN_FLAGS]
    decided = _run(steps)
    assert _ours(decided)[:2] == [(4, "replan"), (5, "stop")]


def test_twin_a_plan_tool_between_real_work_passes() -> None:
    steps: list[Step] = []
    for number, flags in enumerate(PLAN_FLAGS):
        steps.append(("update_plan", _plan(flags), "Plan updated"))
        steps.append(
            ("read_file", {"path": f"src/parser_{number}.py"}, f"def parse_{number}(): ...")
        )
    assert _ours(_run(steps)) == []


def test_twin_twenty_recipients_each_answered_success_pass() -> None:
    steps: list[Step] = [
        (
            "send_email",
            {"to": f"guest{i}@example.com", "subject": "Your invitation", "body": "Join us."},
            {"success": True},
        )
        for i in range(20)
    ]
    decided = _run(steps)
    assert _ours(decided) == [] and _first(decided, Action.REPLAN) is None


def test_twin_distinct_queries_that_find_nothing_pass() -> None:
    queries = ["pricing plans", "refund policy", "api rate limits", "sso setup", "data export"]
    steps: list[Step] = [("search", {"query": q}, {"results": []}) for q in queries]
    assert _ours(_run(steps)) == []


# ---------------------------------------------------------------- family 5: drifting reads

FILE = [f"    statement_{name}()" for name in "abcdefghijklmnopqrstuvwxyz"] + [
    f"    call_{name}(x)" for name in "abcdefghijklmnopqrstuvwxyz"
]


def _numbered(start: int, count: int) -> str:
    """Lines ``start``.. of FILE as a viewer shows them (``cat -n`` numbering)."""
    return "\n".join(f"{n + 1:6}\t{FILE[n]}" for n in range(start, min(start + count, len(FILE))))


def test_overlapping_reads_at_shifting_offsets_with_no_new_line_are_nudged_then_stopped() -> None:
    steps: list[Step] = [("read_file", {"path": "src/app.py", "offset": 0, "limit": 40}, "")]
    steps[0] = ("read_file", {"path": "src/app.py", "offset": 0, "limit": 40}, _numbered(0, 40))
    for offset in (5, 10, 3, 12, 8, 1):
        args = {"path": "src/app.py", "offset": offset, "limit": 20}
        steps.append(("read_file", args, _numbered(offset, 20)))
    decided = _run(steps)
    # read 1 is news; reads 2..5 bring no line not read before: the nudge at read 5
    assert _ours(decided)[:2] == [(5, "replan"), (6, "stop")]


def test_shifting_sed_ranges_of_one_file_count_as_reads_of_one_resource() -> None:
    steps: list[Step] = [("bash", {"command": "cat -n src/app.py"}, _numbered(0, 52))]
    for start in (10, 14, 20, 12, 18, 25):
        steps.append(
            (
                "bash",
                {"command": f"sed -n '{start},{start + 15}p' src/app.py"},
                _numbered(start - 1, 16),
            )
        )
    decided = _run(steps)
    assert _ours(decided)[:2] == [(5, "replan"), (6, "stop")]


def test_twin_paging_through_a_file_with_new_lines_each_time_passes() -> None:
    steps: list[Step] = []
    for offset in range(0, 52, 8):  # overlapping pages, each surfacing new lines
        args = {"path": "src/app.py", "offset": offset, "limit": 10}
        steps.append(("read_file", args, _numbered(offset, 10)))
    assert _ours(_run(steps)) == []


def test_twin_reading_different_files_with_the_same_content_passes() -> None:
    steps: list[Step] = [
        ("read_file", {"path": f"src/pkg{i}/__init__.py", "offset": 0}, "from .core import *")
        for i in range(10)
    ]
    assert _ours(_run(steps)) == []


def test_twin_edit_and_test_iterations_pass() -> None:
    steps: list[Step] = []
    for attempt in range(8):
        patch = f"-    return a\n+    return a + {attempt}\n"
        steps.append(("edit_file", {"path": "app.py", "patch": patch}, "ok"))
        steps.append(("bash", {"command": "pytest -q"}, "1 failed, 12 passed in 0.52s"))
    assert _ours(_run(steps)) == []


# ------------------------------------------------------- family 7: as early as exact repeats


def _first_stop_call(steps: list[Step]) -> int | None:
    return _first(_run(steps, deliver=False), Action.STOP)


def test_reworded_calls_answered_alike_stop_at_the_same_call_as_exact_repeats() -> None:
    exact: list[Step] = [("search", {"query": "pricing plans for teams"}, {"results": []})] * 6
    reworded: list[Step] = [
        ("search", {"query": q}, {"results": []})
        for q in [
            "pricing plans for teams",
            "Teams pricing plans",
            "plans pricing, for the team?",
            "please find the pricing plans for teams",
            "team pricing plan",
            "Pricing plans teams",
        ]
    ]
    assert _first_stop_call(exact) == 3
    assert _first_stop_call(reworded) == 3


def test_reworded_calls_whose_answers_change_are_not_stopped() -> None:
    reworded: list[Step] = [
        ("search", {"query": q}, {"results": [f"doc-{i}"]})
        for i, q in enumerate(
            ["pricing plans", "Pricing plans?", "plans pricing", "pricing, plans"]
        )
    ]
    assert _first_stop_call(reworded) is None


# ------------------------------------------------------------- state and bounds


def test_the_state_survives_a_reload_and_holds_no_content() -> None:
    driver = Driver(StaleResultsDetector)
    queries = ["pricing plans for teams", "team plan prices", "pricing for a team plan"]
    queries.append("what do team plans cost pricing")
    for query in queries[:2]:
        driver.feed(exchange("search_docs", {"query": query}, "no results"))
    exported = json.dumps(driver.detector.export_state(driver.state))
    assert "pricing" not in exported and "no results" not in exported
    driver.reload()
    fired = [
        s
        for q in queries[2:]
        for s in driver.feed(exchange("search_docs", {"query": q}, "no results"))
    ]
    assert [s.evidence["stale_results"] for s in fired] == [3]


def test_state_stays_bounded_over_a_long_run() -> None:
    driver = Driver(StaleResultsDetector)
    for i in range(3000):
        driver.feed(
            exchange("read_file", {"path": f"f{i % 50}.py", "offset": i}, f"line {i}\nx = {i}")
        )
    state = driver.state
    assert len(state.seen.current) == len(state.seen.previous) <= 1024  # bytes, fixed
    assert state.lines is not None and len(state.lines.current) == len(state.lines.previous)


# ------------------------------------------------- two span dialects, the real processor


def _semconv(stack: SdkStack, tool: str, arguments: dict[str, Any], result: str) -> None:
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool,
        "gen_ai.tool.call.arguments": json.dumps(arguments),
        "gen_ai.tool.call.result": result,
    }
    with stack.tracer.start_as_current_span(f"execute_tool {tool}", attributes=attributes):
        pass


def _openinference(stack: SdkStack, tool: str, arguments: dict[str, Any], result: str) -> None:
    attributes = {
        "openinference.span.kind": "TOOL",
        "tool.name": tool,
        "input.value": json.dumps(arguments),
        "input.mime_type": "application/json",
        "output.value": result,
    }
    with stack.tracer.start_as_current_span(tool, attributes=attributes):
        pass


DIALECTS = {"semconv": _semconv, "openinference": _openinference}


def _span_decisions(dialect: str, steps: list[Step], deliver: bool = True) -> list[tuple[str, str]]:
    """(action, detectors) of every decision event, the replans delivered as a framework
    package delivers them (``note_delivered`` on the guard's monitor)."""
    full = make_stack()
    stack = SdkStack(full.provider, full.exporter, full.provider.get_tracer("tests.detectors"))
    monitor = full.guard.monitor
    if deliver:

        def delivered(decision: Decision, event: Any) -> None:
            if decision.action is Action.REPLAN and NAME in decision.detectors:
                monitor.note_delivered(decision.run_id, NAME)

        monitor.add_decision_listener(delivered)
    make = DIALECTS[dialect]
    with stack.tracer.start_as_current_span("invoke_agent writer", attributes=AGENT):
        for tool, arguments, output in steps:
            make(stack, tool, arguments, output if isinstance(output, str) else json.dumps(output))
    return [(d["loopguard.action"], str(d["loopguard.detectors"])) for d in stack.decisions()]


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_spans_a_reworded_search_all_empty_is_nudged_then_stopped(dialect: str) -> None:
    queries = [
        "pricing plans for teams",
        "team plan prices",
        "pricing for a team plan",
        "what do team plans cost pricing",
        "plans and pricing teams",
    ]
    steps: list[Step] = [("search_docs", {"query": q}, '{"results": []}') for q in queries]
    ours = [action for action, detectors in _span_decisions(dialect, steps) if NAME in detectors]
    assert ours[:2] == ["replan", "stop"]


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_spans_drifting_reads_are_nudged_then_stopped(dialect: str) -> None:
    steps: list[Step] = [
        ("read_file", {"path": "src/app.py", "offset": 0, "limit": 40}, _numbered(0, 40))
    ]
    for offset in (5, 10, 3, 12, 8):
        steps.append(
            (
                "read_file",
                {"path": "src/app.py", "offset": offset, "limit": 20},
                _numbered(offset, 20),
            )
        )
    ours = [action for action, detectors in _span_decisions(dialect, steps) if NAME in detectors]
    assert ours[:2] == ["replan", "stop"]


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_spans_twins_pass(dialect: str) -> None:
    recipients: list[Step] = [
        ("send_email", {"to": f"guest{i}@example.com", "subject": "Invite"}, '{"success": true}')
        for i in range(20)
    ]
    paging: list[Step] = [
        ("read_file", {"path": "src/app.py", "offset": o, "limit": 10}, _numbered(o, 10))
        for o in range(0, 52, 8)
    ]
    for steps in (recipients, paging):
        assert _span_decisions(dialect, steps) == []


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_spans_reworded_calls_stop_at_the_same_span_as_exact_repeats(dialect: str) -> None:
    """Family 7 through the span processor: the third answer stops both."""
    exact: list[Step] = [("search", {"query": "pricing plans for teams"}, '{"results": []}')] * 3
    reworded: list[Step] = [
        ("search", {"query": q}, '{"results": []}')
        for q in ["pricing plans for teams", "Teams pricing plans", "plans pricing, for the team?"]
    ]
    for steps in (exact, reworded):
        actions = [action for action, _ in _span_decisions(dialect, steps, deliver=False)]
        assert actions and actions[-1] == "stop", actions
        assert [a for a, _ in _span_decisions(dialect, steps[:2], deliver=False)] in ([], ["warn"])


def test_twin_status_updates_posted_to_one_channel_pass() -> None:
    texts = ["Deploy started", "Deploy finished", "Deploy verified", "Deploy tagged"]
    texts += ["Deploy announced", "Deploy archived"]
    steps: list[Step] = [
        ("post_message", {"channel": "general", "text": t}, {"ok": True}) for t in texts
    ]
    assert _ours(_run(steps)) == []
