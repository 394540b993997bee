"""What the suites of the hand-written loop (``hand_written``) check alike, whichever
OpenAI instrumentation makes its ``chat`` spans: the official one (this suite), OpenLLMetry's
(compat/traceloop-openai) and OpenInference's (compat/openinference-openai) import it from
here. ``chat_spans(harness)`` is each suite's own: their model spans, in start order."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hand_written import ANSWER, LOOP_TURNS, looping, productive
from otel_loopguard_testing.decided import stopped_at, stops
from otel_loopguard_testing.metrics import metric_counter

from otel_loopguard import LoopGuardInterrupt
from otel_loopguard.guard import get_guard


def in_a_run(harness: Any) -> Any:
    """The application marks its run (``agent_run``): the block is one ``assistant`` run."""
    return get_guard().agent_run(harness.app_tracer(), "assistant")


def assert_loop_observed(harness: Any, chat_spans: Callable[[Any], list[Any]]) -> None:
    """Core only, observe mode: the looping loop ran to its end, with no tool span (the
    tools are plain code); a no-progress STOP came by the 4th request (the first three
    results are in the 2nd..4th)."""
    errors = metric_counter(harness)
    loop = looping()

    # the application's own span around its loop (else each request is a trace of its own)
    with harness.app_tracer().start_as_current_span("agent loop"):
        loop.run()

    assert loop.answer == "I gave up."  # observe mode: recorded, not enforced
    assert len(loop.executions) == LOOP_TURNS
    assert harness.tool_spans() == []  # model spans only
    decided = stops(harness)
    assert decided, "no STOP for the same call returning the same empty result"
    assert "no_progress" in decided[0][0].detectors
    requests = stopped_at(harness, chat_spans(harness))
    assert requests is not None and requests <= 4, requests
    assert errors("loopguard.internal_errors") == 0


def assert_two_runs_under_one_span(harness: Any) -> None:
    """Core only: two looping runs under one application span, each with a STOP of its own."""
    with harness.app_tracer().start_as_current_span("handle request"):
        for _ in range(2):
            with in_a_run(harness):
                looping().run()

    assert len({event.run_id for _, event in stops(harness)}) == 2


def assert_tokens_counted(harness: Any, chat_spans: Callable[[Any], list[Any]]) -> None:
    """Core only, a 120-token budget (observe mode): 40 + 10 tokens a request, read from
    their spans; the STOP comes with the third."""
    with harness.app_tracer().start_as_current_span("agent loop"):
        productive().run()

    assert stopped_at(harness, chat_spans(harness), "budget") == 3


def assert_productive_counted_once(harness: Any) -> None:
    """Beside our OpenAI package: the productive run completes with its answer, its five
    turns' tokens counted once each, no STOP."""
    errors = metric_counter(harness)

    with in_a_run(harness):
        assert productive().run() == ANSWER

    assert harness.run_state("assistant") == "completed"
    assert harness.run_usage("assistant") == (5 * 40, 5 * 10)  # five turns, once each
    assert harness.decision_events("stop") == []
    assert errors("loopguard.internal_errors") == 0


def assert_budget_stops_the_third_request(harness: Any) -> None:
    """Beside our OpenAI package, a 120-token budget: 50 tokens a turn, so the third goes
    over (counted twice, the second would): interrupted after it, its tokens counted."""
    loop = productive()

    with pytest.raises(LoopGuardInterrupt) as raised, in_a_run(harness):
        loop.run()

    assert raised.value.decision.detectors == ("budget",)
    assert len(loop.api.requests) == 3
    assert harness.run_state("assistant") == "budget_exceeded"
    assert harness.run_usage("assistant") == (3 * 40, 3 * 10)
