"""The official openai-v2 instrumentation alone with our core, observe mode (issue 17,
point 5): a hand-written loop has only ``chat`` spans; with content capture on, the tools'
calls and results are read from the next request's ``gen_ai.input.messages``."""

from __future__ import annotations

import pytest
from hand_written import ANSWER, LOOP_TURNS, content_capture, looping, productive
from otel_loopguard_testing.decided import stopped_at
from otel_loopguard_testing.metrics import metric_counter

from otel_loopguard.guard import get_guard


def _stops(harness) -> list:
    return [(d, e) for d, e in harness.decided if d.action.value == "stop"]


def test_a_looping_hand_written_loop_gets_a_stop_within_the_fourth_call(observe_loopguard):
    errors = metric_counter(observe_loopguard)
    loop = looping()

    # the application's own span around its loop (else each request is a trace of its own)
    with observe_loopguard.app_tracer().start_as_current_span("agent loop"):
        loop.run()

    assert loop.answer == "I gave up."  # observe mode: recorded, not enforced
    assert len(loop.executions) == LOOP_TURNS
    assert observe_loopguard.tool_spans() == []  # chat spans only
    stops = _stops(observe_loopguard)
    assert stops, "no STOP for the same call returning the same empty result"
    assert "no_progress" in stops[0][0].detectors
    # the first three results are in the 2nd..4th requests: decided by the 4th at the latest
    requests = stopped_at(observe_loopguard, observe_loopguard.spans("chat "))
    assert requests is not None and requests <= 4, requests
    assert errors("loopguard.internal_errors") == 0


@pytest.mark.parametrize("content", [True, False], ids=["content-on", "content-off"])
def test_a_productive_loop_gets_no_stop(observe_loopguard, content):
    errors = metric_counter(observe_loopguard)
    loop = productive()

    with (
        content_capture(observe_loopguard, content),
        observe_loopguard.app_tracer().start_as_current_span("agent loop"),
    ):
        assert loop.run() == ANSWER

    assert len(observe_loopguard.spans("chat ")) == 5
    if content:
        assert "gen_ai.input.messages" in observe_loopguard.spans("chat ")[-1].attributes
    assert _stops(observe_loopguard) == []
    assert errors("loopguard.internal_errors") == 0


def test_without_content_the_loop_is_counted_not_claimed(observe_loopguard):
    """Content off: the requests hold no messages; the turns still count (budgets work),
    but nothing says the calls were the same: no STOP from them."""
    loop = looping()

    with (
        content_capture(observe_loopguard, False),
        observe_loopguard.app_tracer().start_as_current_span("agent loop"),
    ):
        loop.run()

    assert all("gen_ai.input.messages" not in s.attributes for s in observe_loopguard.spans())
    assert _stops(observe_loopguard) == []


def test_two_invocations_under_one_application_span_are_two_runs(observe_loopguard):
    tracer = observe_loopguard.app_tracer()

    with tracer.start_as_current_span("handle request"):
        for _ in range(2):
            with get_guard().agent_run(tracer, "assistant"):
                looping().run()

    stopped = {event.run_id for _, event in _stops(observe_loopguard)}
    assert len(stopped) == 2


def test_tokens_are_counted_from_their_chat_spans(make_loopguard):
    """A 120-token budget in observe mode: 40 + 10 tokens a request, the STOP comes with
    the third."""
    harness = make_loopguard(mode="observe", token_budget=120)

    with harness.app_tracer().start_as_current_span("agent loop"):
        productive().run()

    assert stopped_at(harness, harness.spans("chat "), "budget") == 3
