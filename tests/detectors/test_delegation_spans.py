"""Delegation ping-pong from real SDK spans, in two dialects, through the real span processor.

A CrewAI-style manager delegates through "Delegate work to coworker" / "Ask question to
coworker" tool spans (the coworker's own agent span nested inside each), as OpenTelemetry
GenAI semantic-conventions ``execute_tool`` spans and as OpenInference ``TOOL`` spans
(``tool.name``, ``input.value``, ``output.value``). The span processor alone delivers no
recommendation, so the loop gets its replan at the fourth delegation (the second in a row
answered as before) and the STOP at the sixth; the twins get no decision at all.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from otel.helpers import Stack, make_stack

from otel_loopguard.engine.decisions import Action, Decision

RESEARCH_ANSWER = (
    "I could not find any pricing information for Acme Corp on the public web; the "
    "pricing page requires a login and no third-party source lists their plans."
)
ANALYST_ANSWER = (
    "Without the pricing data I cannot compare Acme Corp with our plans; please provide "
    "the figures first."
)
TASKS = [
    "Research Acme Corp's pricing plans",
    "Compare Acme's prices with ours",
    "Find out what Acme Corp charges its customers",
    "Work out whether Acme undercuts us on price",
    "Look up the subscription tiers Acme offers and their prices",
    "Tell me if we are more expensive than Acme",
    "Try once more to find how much Acme Corp costs per seat",
]


def _semconv_manager(stack: Stack) -> Any:
    return stack.tracer.start_as_current_span(
        "invoke_agent Crew Manager",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Crew Manager"},
    )


def _semconv_delegation(stack: Stack, tool: str, arguments: dict, answer: str) -> None:
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool,
        "gen_ai.tool.call.arguments": json.dumps(arguments),
        "gen_ai.tool.call.result": answer,
    }
    with stack.tracer.start_as_current_span(f"execute_tool {tool}", attributes=attributes):
        coworker = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": arguments["coworker"],
        }
        with stack.tracer.start_as_current_span(
            f"invoke_agent {arguments['coworker']}", attributes=coworker
        ):
            pass


def _openinference_manager(stack: Stack) -> Any:
    return stack.tracer.start_as_current_span(
        "Crew Manager",
        attributes={"openinference.span.kind": "AGENT", "agent.name": "Crew Manager"},
    )


def _openinference_delegation(stack: Stack, tool: str, arguments: dict, answer: str) -> None:
    attributes = {
        "openinference.span.kind": "TOOL",
        "tool.name": tool,
        "input.value": json.dumps(arguments),
        "output.value": answer,
    }
    with stack.tracer.start_as_current_span(tool, attributes=attributes):
        coworker = {"openinference.span.kind": "AGENT", "agent.name": arguments["coworker"]}
        with stack.tracer.start_as_current_span(arguments["coworker"], attributes=coworker):
            pass


DIALECTS = {
    "genai-semconv": (_semconv_manager, _semconv_delegation),
    "openinference": (_openinference_manager, _openinference_delegation),
}
Delegations = list[tuple[str, dict, str]]


def _run(dialect: str, delegations: Delegations) -> dict[int, tuple[str, set[str]]]:
    """Feed the delegations as spans of ``dialect`` through the span processor; per
    delegation (numbered from 1) that got a decision: the strongest action and every
    detector behind that delegation's decisions (others may see the same answers too)."""
    manager, delegate = DIALECTS[dialect]
    stack = make_stack()
    found: dict[int, tuple[Action, set[str]]] = {}
    number = 0

    def listen(decision: Decision, _event: Any) -> None:
        action, detectors = found.get(number, (Action.CONTINUE, set()))
        found[number] = (max(action, decision.action), detectors | set(decision.detectors))

    stack.guard.monitor.add_decision_listener(listen)
    with manager(stack):
        for number, (tool, arguments, answer) in enumerate(delegations, start=1):  # noqa: B007
            delegate(stack, tool, arguments, answer)
    return {n: (action.value, detectors) for n, (action, detectors) in found.items()}


def _by_handoff_cycle(found: dict[int, tuple[str, set[str]]]) -> dict[int, str]:
    return {n: action for n, (action, detectors) in found.items() if "handoff_cycle" in detectors}


def _ping_pong(rounds: int) -> Delegations:
    return [
        (
            "Delegate work to coworker",
            {
                "task": TASKS[i],
                "context": "We are preparing a competitor report.",
                "coworker": "Researcher" if i % 2 == 0 else "Analyst",
            },
            RESEARCH_ANSWER if i % 2 == 0 else ANALYST_ANSWER,
        )
        for i in range(rounds)
    ]


parametrized = pytest.mark.parametrize("dialect", sorted(DIALECTS))


@parametrized
def test_ping_pong_is_replanned_at_the_fourth_delegation_and_stopped_at_the_sixth(
    dialect: str,
) -> None:
    found = _run(dialect, _ping_pong(6))
    assert _by_handoff_cycle(found) == {4: "replan", 5: "replan", 6: "stop"}
    assert max(found) == 6 and min(found) >= 3


@parametrized
def test_questions_reworded_to_one_coworker_answered_alike_are_replanned(dialect: str) -> None:
    asked = [
        (
            "Ask question to coworker",
            {"question": task, "context": "competitor report", "coworker": "Researcher"},
            RESEARCH_ANSWER,
        )
        for task in TASKS[:4]
    ]
    assert _by_handoff_cycle(_run(dialect, asked)) == {3: "replan", 4: "replan"}


# -- the twins: no decision at all ---------------------------------------------------------------


@parametrized
def test_distinct_subtasks_with_different_answers_pass(dialect: str) -> None:
    topics = ["pricing", "features", "support", "security", "roadmap", "customers"] * 2
    work = [
        (
            "Delegate work to coworker",
            {
                "task": f"Write the {topic} section",
                "context": "competitor report",
                "coworker": ["Researcher", "Analyst", "Writer"][i % 3],
            },
            f"The {topic} section ({i}): Acme's {topic} compared with ours, with sources.",
        )
        for i, topic in enumerate(topics)
    ]
    assert _run(dialect, work) == {}


@parametrized
def test_one_way_delegation_with_new_answers_passes(dialect: str) -> None:
    work = [
        (
            "Delegate work to coworker",
            {
                "task": f"Find more on Acme's pricing, source {i}",
                "context": "",
                "coworker": "Researcher",
            },
            f"Source {i} lists the starter plan at {10 + i} dollars per seat per month.",
        )
        for i in range(10)
    ]
    assert _run(dialect, work) == {}


@parametrized
def test_two_different_questions_to_one_coworker_pass(dialect: str) -> None:
    asked = [
        (
            "Ask question to coworker",
            {"question": "What does Acme charge?", "context": "", "coworker": "Researcher"},
            RESEARCH_ANSWER,
        ),
        (
            "Ask question to coworker",
            {"question": "Who are Acme's customers?", "context": "", "coworker": "Researcher"},
            "Their case studies name Globex, Initech and Umbrella as customers.",
        ),
    ]
    assert _run(dialect, asked) == {}


@parametrized
def test_distinct_work_acknowledged_alike_passes(dialect: str) -> None:
    work = [
        (
            "Delegate work to coworker",
            {
                "task": f"Email the report to client {i}",
                "context": "",
                "coworker": f"Mailer {i % 4}",
            },
            '{"success": true}',
        )
        for i in range(20)
    ]
    assert _run(dialect, work) == {}
