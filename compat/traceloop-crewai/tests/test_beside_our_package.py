"""Our CrewAI package beside OpenLLMetry's CrewAI (and OpenAI) instrumentation, enforce
mode, in either instrumentation order: our gate interrupts the looping crew, a productive
crew completes with its real steps and tokens, and nothing else is raised into the crew."""

from __future__ import annotations

import pytest
from crews import (
    ANSWER,
    OUR_SCOPE,
    kickoff,
    looping_search,
    looping_turns,
    our_run,
    productive_search,
    productive_turns,
)
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.compat_checks import assert_interrupted

from otel_loopguard import LoopGuardInterrupt


def test_a_looping_crew_is_interrupted_in_every_invocation(with_our_package) -> None:
    harness = with_our_package(mode="enforce")

    def start():
        search = looping_search()
        return lambda: kickoff(looping_turns(8), search), lambda: len(search.executions)

    assert_interrupted(harness, start, invocations=2)
    runs = [s for s in harness.spans("invoke_agent") if s.instrumentation_scope.name == OUR_SCOPE]
    assert [s.attributes["loopguard.run.state"] for s in runs] == ["stopped"] * 2


def test_a_token_budget_stops_at_the_right_turn(with_our_package) -> None:
    """15 tokens a turn, a budget of 40: the 3rd turn goes over it (counted twice, the 2nd
    would)."""
    with_our_package(mode="enforce", token_budget=40)
    search = productive_search()
    with pytest.raises(LoopGuardInterrupt) as stopped:
        kickoff(productive_turns(), search)
    assert stopped.value.decision.detectors == ("budget",)
    assert len(search.executions) == 2


def test_steps_and_tokens_on_the_agent_span_are_the_real_ones(with_our_package) -> None:
    """Their CrewAI instrumentation and our package (what a CrewAI 1.x user adds): 4 turns
    of 10 + 5 tokens, each counted once, and the run completes within ``max_steps=4``."""
    harness = with_our_package(mode="enforce", max_steps=4)
    count = metric_counter(harness)
    search = productive_search()
    assert str(kickoff(productive_turns(), search)) == ANSWER
    run = our_run(harness)
    assert run.attributes["loopguard.run.state"] == "completed"
    usage = (
        run.attributes["gen_ai.usage.input_tokens"],
        run.attributes["gen_ai.usage.output_tokens"],
    )
    assert usage == (40, 20)
    assert count("loopguard.internal_errors") == 0
