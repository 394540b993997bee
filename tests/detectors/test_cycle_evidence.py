"""A cycle of unchanged answers is its own no-progress evidence (issue 18, point 10).

Three listing tools cycled, each returning ``[]``: after two full periods every call has
been answered exactly as before with only the cycle in between, which is enough to stop.
Twins that must not stop there: the same cycle whose answers change (pages behind opaque
cursors), and polling with a wait in the cycle (that gets the no-progress patience).
Under the real monitor and default policy, one model turn per call.
"""

from __future__ import annotations

from scripted_runs import Step, turns

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Action
from otel_loopguard.engine.events import EventKind, tool_call, tool_result
from otel_loopguard.engine.monitor import Monitor
from otel_loopguard.spans.events import handoff_event

RUN = "handoffs"


def _answers_until_stop(
    steps: list[Step], config: LoopGuardConfig | None = None
) -> tuple[int | None, set[str]]:
    """How many tool answers the run got before the first STOP (None: never stopped)."""
    monitor = Monitor(config or LoopGuardConfig())
    answers = 0
    for event in turns(steps):
        decision = monitor.observe(event)
        if event.kind in (EventKind.TOOL_RESULT, EventKind.TOOL_ERROR):
            answers += 1
        if decision.action is Action.STOP:
            return answers, set(decision.detectors)
    return None, set()


LISTINGS: list[Step] = [
    ("list_buckets", {"region": "eu-west-1"}, "[]"),
    ("list_tables", {"region": "eu-west-1"}, "[]"),
    ("list_queues", {"region": "eu-west-1"}, "[]"),
]


def test_three_listings_returning_nothing_stop_after_two_full_periods() -> None:
    answers, detectors = _answers_until_stop(LISTINGS * 4)
    assert answers == 6 and detectors == {"action_cycle"}


def test_two_step_cycle_stops_after_two_full_periods() -> None:
    steps: list[Step] = [
        ("search", {"query": "refund policy"}, "see /help/refunds"),
        ("open_page", {"url": "/help/refunds"}, "404: page moved"),
    ] * 4
    assert _answers_until_stop(steps)[0] == 4


def test_the_same_cycle_over_changing_pages_is_not_stopped() -> None:
    steps: list[Step] = []
    for page in range(6):
        cursor = f"eyJvZmZzZXQiOi{page * 7919:x}In0"  # opaque, different every page
        steps += [
            (tool, {"region": "eu-west-1", "cursor": cursor}, f'["item-{page}-{tool}"]')
            for tool, _, _ in LISTINGS
        ]
    assert _answers_until_stop(steps) == (None, set())


def test_polling_with_a_sleep_in_the_cycle_is_not_stopped_at_two_periods() -> None:
    polls: list[Step] = [
        ("get_workflow_run", {"run_id": 7}, '{"status": "in_progress"}'),
        ("sleep", {"seconds": 30}, "slept 30 s"),
    ] * 4
    done: list[Step] = [("get_workflow_run", {"run_id": 7}, '{"status": "completed"}')]
    assert _answers_until_stop(polls + done) == (None, set())


def test_polling_with_a_shell_sleep_in_the_cycle_is_not_stopped_at_two_periods() -> None:
    polls: list[Step] = [
        ("bash", {"command": "gh run view 7 --json status"}, '{"status":"in_progress"}'),
        ("bash", {"command": "sleep 30"}, ""),
    ] * 4
    done: list[Step] = [("bash", {"command": "gh run view 7 --json status"}, "completed")]
    assert _answers_until_stop(polls + done) == (None, set())


def test_polling_with_a_configured_wait_tool_in_the_cycle_is_not_stopped_at_two_periods() -> None:
    """``await_deploy`` waits, though its name does not start with a wait word: as shipped
    the cycle stops; named in ``OTEL_LOOPGUARD_WAIT_TOOLS`` it is polling between waits."""
    polls: list[Step] = [
        ("get_workflow_run", {"run_id": 7}, '{"status": "in_progress"}'),
        ("await_deploy", {"seconds": 30}, "still deploying"),
    ] * 4
    done: list[Step] = [("get_workflow_run", {"run_id": 7}, '{"status": "completed"}')]
    configured = LoopGuardConfig.from_env({"OTEL_LOOPGUARD_WAIT_TOOLS": "await_deploy"})
    assert _answers_until_stop(polls + done)[0] is not None
    assert _answers_until_stop(polls + done, configured) == (None, set())


def test_a_cycle_of_handoff_tools_is_left_to_the_handoff_cycle() -> None:
    """Agents handing a task around are judged at the run's level, by handoff_cycle."""
    monitor = Monitor(LoopGuardConfig())
    first_stop: set[str] = set()
    hops = [("triage", "billing"), ("billing", "triage")] * 3
    for number, (source, target) in enumerate(hops):
        tool = f"transfer_to_{target}"
        call = tool_call(RUN, tool, {}, call_id=f"h{number}")
        events = [
            call,
            tool_result(RUN, tool, "transferred", call_id=f"h{number}"),
            handoff_event(RUN, source, target, tool_name=tool),
        ]
        for event in events:
            decision = monitor.observe(event)
            if decision.action is Action.STOP and not first_stop:
                first_stop = set(decision.detectors)
    assert first_stop == {"handoff_cycle"}
