"""Delegation ping-pong in a real hierarchical CrewAI crew (issue 28, family 3).

CrewAI gives a hierarchical crew's manager two delegation tools, "Delegate work to
coworker" (``task``, ``context``, ``coworker``) and "Ask question to coworker"
(``question``, ...). Here the manager's model (the suite's ``ScriptedLLM``, recording its
requests) bounces a reworded task between a researcher and an analyst whose answers never
change. The fourth delegation (the second in a row bringing back an answer the manager
already had) gets a replan whose recommendation reaches the manager's next request; a
manager that then decides with what it has completes, one that delegates again is stopped
at its fifth delegation. A manager delegating distinct subtasks that get new answers is
never interrupted.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from crewai import Agent, Crew, Process, Task
from scripted_crew import Move, ScriptedLLM

from otel_loopguard.engine.decisions import LoopGuardInterrupt

NUDGE = "Do not delegate it again"
DELEGATE = "Delegate work to coworker"
TASKS = [
    "Research Acme Corp's pricing plans",
    "Compare Acme's prices with ours",
    "Find out what Acme Corp charges its customers",
    "Work out whether Acme undercuts us on price",
    "Look up the subscription tiers Acme offers",
    "Tell me if we are more expensive than Acme",
    "Try once more to find Acme's price per seat",
    "Ask around for Acme's pricing",
]


class ListeningLLM(ScriptedLLM):
    """Keeps a copy of each request and answers from ``policy(messages)``."""

    policy: Any = None
    requests: Any = None

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        self.requests.append(copy.deepcopy(list(messages)))
        self.script = lambda n: self.policy(self.requests[-1])
        return super().call(messages, *args, **kwargs)


def _coworker(role: str, answer: Any) -> Agent:
    llm = ScriptedLLM(model="scripted", script=lambda n: ("answer", answer(n), None))
    return Agent(role=role, goal=f"help as the {role}", backstory="a colleague", llm=llm)


def _mentions(messages: list[dict[str, Any]], text: str) -> int:
    return sum(text in str(message.get("content")) for message in messages)


def _delegations(messages: list[dict[str, Any]]) -> int:
    return sum(message.get("role") == "tool" for message in messages)


def _crew(policy: Any, researcher: Any, analyst: Any) -> tuple[Crew, ListeningLLM]:
    manager = ListeningLLM(model="scripted", policy=policy, requests=[])
    agents = [_coworker("Researcher", researcher), _coworker("Analyst", analyst)]
    task = Task(description="Write a competitor report on Acme Corp", expected_output="a report")
    crew = Crew(
        agents=agents,
        tasks=[task],
        process=Process.hierarchical,
        manager_llm=manager,
        verbose=False,
    )
    return crew, manager


def _bouncing(listens: bool) -> Any:
    def policy(messages: list[dict[str, Any]]) -> Move:
        if listens and _mentions(messages, NUDGE):
            return ("answer", "Acme's pricing is not public; report without it.", None)
        number = _delegations(messages)
        coworker = "Researcher" if number % 2 == 0 else "Analyst"
        arguments = {"task": TASKS[number], "context": "competitor report", "coworker": coworker}
        return ("tool", DELEGATE, arguments)

    return policy


def _not_found(n: int) -> str:
    return "I could not find any pricing information for Acme Corp on the public web."


def _no_data(n: int) -> str:
    return "Without the pricing data I cannot compare Acme Corp with our plans."


def test_a_manager_that_heeds_the_nudge_completes(make_loopguard: Any) -> None:
    make_loopguard(mode="enforce")
    crew, manager = _crew(_bouncing(listens=True), _not_found, _no_data)

    result = crew.kickoff()

    assert result.raw == "Acme's pricing is not public; report without it."
    carrying = [i for i, request in enumerate(manager.requests) if _mentions(request, NUDGE)]
    assert len(carrying) == 1
    assert _delegations(manager.requests[carrying[0]]) == 4  # told after the fourth


def test_a_manager_that_delegates_again_is_stopped_at_the_fifth(make_loopguard: Any) -> None:
    make_loopguard(mode="enforce")
    crew, manager = _crew(_bouncing(listens=False), _not_found, _no_data)

    with pytest.raises(LoopGuardInterrupt) as stopped:
        crew.kickoff()

    assert "the nudge did not help" in stopped.value.decision.reason
    assert "handoff_cycle" in stopped.value.decision.detectors
    assert _delegations(manager.requests[-1]) == 4  # the fifth delegation's answer never came


def test_distinct_subtasks_with_new_answers_are_not_interrupted(make_loopguard: Any) -> None:
    harness = make_loopguard(mode="enforce")

    def policy(messages: list[dict[str, Any]]) -> Move:
        number = _delegations(messages)
        if number >= 6:
            return ("answer", "report written", None)
        coworker = "Researcher" if number % 2 == 0 else "Analyst"
        arguments = {"task": f"Section {number}", "context": "report", "coworker": coworker}
        return ("tool", DELEGATE, arguments)

    crew, manager = _crew(policy, lambda n: f"finding {n}: new facts", lambda n: f"analysis {n}")
    result = crew.kickoff()

    assert result.raw == "report written"
    assert not any(_mentions(request, NUDGE) for request in manager.requests)
    decisions = [e for s in harness.spans() for e in s.events if e.name == "loopguard.decision"]
    assert decisions == []
