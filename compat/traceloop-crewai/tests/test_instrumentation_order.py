"""Our CrewAI package with OpenLLMetry's CrewAI and OpenAI instrumentations, in either
instrumentation order, enforce mode: nothing but our interrupt is raised into the crew.

This file runs last (its name): their OpenAI instrumentation does not come off entirely when
uninstrumented, so the suite's other tests must not follow it in one session.
"""

from __future__ import annotations

import pytest
from crews import (
    ANSWER,
    kickoff,
    looping_search,
    looping_turns,
    our_run,
    productive_search,
    productive_turns,
)
from otel_loopguard_testing import metric_counter

from otel_loopguard import LoopGuardInterrupt


def test_in_either_order_the_loop_is_interrupted_and_a_productive_crew_completes(
    either_order,
) -> None:
    """Their CrewAI and OpenAI instrumentations applied before ours, or after ours: the
    looping crew ends with our interrupt only (within 4 executions), the productive one
    with its answer."""
    harness = either_order(mode="enforce")
    count = metric_counter(harness)
    search = looping_search()
    with pytest.raises(LoopGuardInterrupt):
        kickoff(looping_turns(8), search)
    assert 1 <= len(search.executions) <= 4

    harness.exporter.clear()
    productive = productive_search()
    assert str(kickoff(productive_turns(), productive)) == ANSWER
    assert our_run(harness).attributes["loopguard.run.state"] == "completed"
    assert count("loopguard.internal_errors") == 0
