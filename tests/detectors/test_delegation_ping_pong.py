"""Delegation ping-pong (issue 28, family 3): a manager bouncing a task between coworkers
through delegation tools, the task reworded each round and the same answers coming back.

Events made by the real builders (the span side's :func:`delegation_event`, as the span
mapping and our gate feed a delegation tool), fed to the real monitor with the default
policy: the loop is answered with a replan for the manager at the fourth delegation (the
second in a row bringing back an answer the manager already had), then a STOP at the
fifth once the nudge was delivered (the ladder), or at the sixth when nothing delivers.
Its twins (distinct subtasks with different answers, one-way repeated delegation with
new answers, two questions to one coworker, a batch of distinct work acknowledged alike)
are never interrupted.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator

from scripted_runs import Driver

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Action, Decision
from otel_loopguard.engine.detectors.handoff_cycle import MAX_ANSWERS, HandoffCycleDetector
from otel_loopguard.engine.events import Event, tool_call, tool_result
from otel_loopguard.engine.monitor import Monitor
from otel_loopguard.spans.events import delegation_event, delegation_tools

RUN = "crew-1"
DELEGATE = "Delegate work to coworker"
ASK = "Ask question to coworker"
_ids = itertools.count()

RESEARCH_ANSWER = (
    "I could not find any pricing information for Acme Corp on the public web; the "
    "pricing page requires a login and no third-party source lists their plans."
)
ANALYST_ANSWER = (
    "Without the pricing data I cannot compare Acme Corp with our plans; please provide "
    "the figures first."
)
REWORDED_TASKS = [
    "Research Acme Corp's pricing plans",
    "Find out what Acme Corp charges its customers",
    "Look up the subscription tiers Acme offers and their prices",
    "Dig deeper into Acme's price list, check review sites too",
    "Try once more to find how much Acme Corp costs per seat",
    "Get the Acme pricing, any source will do",
    "Collect Acme Corp price points for the comparison",
    "Search for Acme's enterprise and starter prices",
]


def delegation(
    coworker: str, task: str, answer: object, *, tool: str = DELEGATE, manager: str = "manager"
) -> list[Event]:
    """One delegation tool call of ``manager`` and its answer, plus the delegation handoff
    the span side makes of them."""
    call_id = f"d{next(_ids)}"
    key = "question" if tool == ASK else "task"
    arguments = {
        key: task,
        "context": "We are preparing a competitor report.",
        "coworker": coworker,
    }
    call = tool_call(RUN, tool, arguments, actor=manager, call_id=call_id)
    outcome = tool_result(RUN, tool, answer, actor=manager, call_id=call_id)
    assert delegation_tools(LoopGuardConfig())[tool]
    handoff = delegation_event(call, outcome)
    assert handoff is not None
    return [call, outcome, handoff]


def ping_pong(rounds: int) -> Iterator[list[Event]]:
    """Researcher and analyst in turn, each task reworded, each answer as before."""
    for number in range(rounds):
        if number % 2 == 0:
            yield delegation("Researcher", REWORDED_TASKS[number], RESEARCH_ANSWER)
        else:
            yield delegation("Analyst", f"Compare: {REWORDED_TASKS[number]}", ANALYST_ANSWER)


def decisions(
    rounds: Iterable[list[Event]], *, deliver: bool = False, **settings: object
) -> list[Decision]:
    """The strongest decision at each delegation; with ``deliver`` each replan's
    recommendation reaches the manager's model (as a framework package does in enforce
    mode)."""
    monitor = Monitor(LoopGuardConfig(**settings))  # type: ignore[arg-type]
    found = []
    for events in rounds:
        worst = max((monitor.observe(event) for event in events), key=lambda d: d.action)
        found.append(worst)
        if deliver and worst.action is Action.REPLAN:
            monitor.note_delivered(RUN, "handoff_cycle")
    return found


def actions(found: list[Decision]) -> list[str]:
    return [d.action.value for d in found]


# -- the loop ----------------------------------------------------------------------------------


def test_ping_pong_is_nudged_at_the_fourth_delegation_and_stopped_at_the_fifth() -> None:
    found = decisions(ping_pong(5), deliver=True)
    assert actions(found) == ["continue", "continue", "continue", "replan", "stop"]
    replan, stop = found[3], found[4]
    assert replan.reasons[0].kind == "delegation"
    assert replan.recommendation is not None
    assert "delegated the same task 2 more times" in replan.recommendation
    assert "Researcher, Analyst" in replan.recommendation
    assert "the nudge did not help" in stop.reason


def test_ping_pong_without_delivery_stops_at_the_sixth_delegation() -> None:
    found = decisions(ping_pong(6))
    assert actions(found) == ["continue"] * 3 + ["replan", "replan", "stop"]
    assert found[5].reasons[0].kind == "delegation_persistent"


def test_one_coworker_answering_the_same_to_reworded_questions() -> None:
    rounds = (delegation("Researcher", task, RESEARCH_ANSWER, tool=ASK) for task in REWORDED_TASKS)
    assert actions(decisions(rounds, deliver=True))[:4] == [
        "continue",
        "continue",
        "replan",
        "stop",
    ]


def test_a_coworker_name_that_does_not_exist_answered_with_the_same_error() -> None:
    """CrewAI answers a delegation to an unknown coworker with the list of valid ones; a
    manager that keeps guessing names gets the same text back each time."""
    error = (
        "Error executing tool. coworker mentioned not found, it must be one of the "
        "following options:\n- researcher\n- analyst"
    )
    names = ["Senior Researcher", "Research Agent", "research analyst", "Lead Researcher"]
    rounds = (delegation(name, REWORDED_TASKS[i], error) for i, name in enumerate(names))
    assert actions(decisions(rounds, deliver=True)) == ["continue", "continue", "replan", "stop"]


def test_threshold_comes_from_config() -> None:
    found = decisions(ping_pong(6), deliver=True, delegation_repeat_threshold=3)
    assert actions(found) == ["continue"] * 4 + ["replan", "stop"]


# -- the twins ---------------------------------------------------------------------------------


def test_distinct_subtasks_with_different_answers_pass() -> None:
    rounds = (
        delegation(
            ["Researcher", "Analyst", "Writer"][i % 3],
            f"Section {i}: {topic}",
            f"Here is section {i} about {topic}: it covers {topic} in depth with sources.",
        )
        for i, topic in enumerate(
            ["pricing", "features", "support", "security", "roadmap", "customers"] * 3
        )
    )
    assert set(actions(decisions(rounds, deliver=True))) == {"continue"}


def test_one_way_repeated_delegation_with_new_answers_passes() -> None:
    rounds = (
        delegation(
            "Researcher",
            "Find more about Acme's pricing",
            f"New finding {i}: plan {i} costs {i * 10} dollars per seat.",
        )
        for i in range(12)
    )
    found = decisions(rounds, deliver=True)
    # the same task word for word is repetition's (a warn), never this detector's
    assert max(d.action for d in found) <= Action.WARN
    assert not any("handoff_cycle" in d.detectors for d in found)


def test_two_different_questions_to_one_coworker_pass() -> None:
    rounds = [
        delegation("Researcher", "What does Acme charge?", RESEARCH_ANSWER, tool=ASK),
        delegation(
            "Researcher",
            "Who are Acme's biggest customers?",
            "Their case studies name Globex, Initech and Umbrella as customers.",
            tool=ASK,
        ),
    ]
    assert set(actions(decisions(rounds, deliver=True))) == {"continue"}


def test_a_batch_of_distinct_work_acknowledged_alike_passes() -> None:
    """Twenty emails to twenty recipients through one coworker, each answered
    ``{"success": true}`` or "Done.": the same acknowledgement is no stale answer."""
    rounds = [
        delegation("Mailer", f"Send the report to recipient{i}@example.com", {"success": True})
        for i in range(20)
    ] + [delegation("Writer", f"Write paragraph {i}", "Done.") for i in range(10)]
    assert set(actions(decisions(rounds, deliver=True))) == {"continue"}


def test_a_new_answer_in_between_resets_the_count() -> None:
    rounds = list(ping_pong(3))
    rounds.append(
        delegation(
            "Analyst",
            "Compare with the figures you now have",
            "With the list prices from the reseller, Acme is 20% cheaper per seat than us.",
        )
    )
    rounds += list(ping_pong(2))
    assert actions(decisions(rounds, deliver=True)) == ["continue"] * 5 + ["replan"]


# -- state -------------------------------------------------------------------------------------


def _handoffs(rounds: Iterable[list[Event]]) -> Iterator[Event]:
    for events in rounds:
        yield events[2]


def test_export_restore_mid_run_continues_counts() -> None:
    run = Driver(HandoffCycleDetector)
    rounds = list(ping_pong(4))
    assert run.feed(_handoffs(rounds[:3])) == []
    run.reload()
    (signal,) = run.feed(_handoffs(rounds[3:]))
    assert (signal.kind, signal.evidence["delegations"]) == ("delegation", 2)


def test_evidence_holds_no_content() -> None:
    run = Driver(HandoffCycleDetector)
    (signal,) = run.feed(_handoffs(ping_pong(4)))
    shown = repr(signal.evidence)
    assert "pricing" not in shown and "Acme" not in shown


def test_state_stays_bounded_after_100k_distinct_answers() -> None:
    run = Driver(HandoffCycleDetector)
    rounds = (delegation("Researcher", "go", f"answer number {i} is new") for i in range(100_000))
    assert run.feed(_handoffs(rounds)) == []
    assert len(run.state.answers) <= MAX_ANSWERS and run.state.stale == 0


def test_closed_handoff_cycles_are_counted_as_before_beside_delegations() -> None:
    """Delegations do not feed the chain of transfer handoffs: asking one coworker twice
    closes no cycle."""
    run = Driver(HandoffCycleDetector)
    rounds = [
        delegation("Researcher", f"question {i}", f"answer {i} with new facts") for i in range(6)
    ]
    assert run.feed(_handoffs(rounds)) == []
    assert run.state.chain == []


def test_acknowledgement_length_comes_from_config() -> None:
    """With ``DELEGATION_ACK_WORDS=0`` every answer counts, "Done." too: the third "Done."
    is a replan."""
    rounds = [delegation("Writer", f"Write paragraph {i}", "Done.") for i in range(3)]
    assert actions(decisions(rounds)) == ["continue", "continue", "continue"]
    found = decisions(rounds, delegation_ack_words=0)
    assert actions(found) == ["continue", "continue", "replan"]
