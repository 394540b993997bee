"""OpenLLMetry's OpenAI ``openai.chat`` spans around a hand-written loop whose tools are
plain application code (issue 17, point 5): like the official instrumentation's, its
requests carry the tools' calls and results in ``gen_ai.input.messages``
(``tool_call_response`` parts), read as the executions they describe."""

from __future__ import annotations

import pytest
from hand_written import ANSWER, LOOP_TURNS, looping, looping_in_a_run, productive
from otel_loopguard_testing.compat_checks import assert_interrupted_in_each_invocation
from otel_loopguard_testing.decided import stopped_at
from otel_loopguard_testing.metrics import metric_counter

from otel_loopguard import LoopGuardInterrupt
from otel_loopguard.guard import get_guard


@pytest.fixture(params=["content-on", "content-off"])
def content(request, monkeypatch) -> bool:
    """Traceloop's content capture (``TRACELOOP_TRACE_CONTENT``, read per request)."""
    on = request.param == "content-on"
    monkeypatch.setenv("TRACELOOP_TRACE_CONTENT", "true" if on else "false")
    return on


def _stops(harness) -> list:
    return [(d, e) for d, e in harness.decided if d.action.value == "stop"]


def test_core_only_a_looping_loop_gets_a_stop_within_the_fourth_call(observe_loopguard):
    errors = metric_counter(observe_loopguard)
    loop = looping()

    with observe_loopguard.app_tracer().start_as_current_span("agent loop"):
        loop.run()

    assert len(loop.executions) == LOOP_TURNS  # observe mode: recorded, not enforced
    stops = _stops(observe_loopguard)
    assert stops
    assert "no_progress" in stops[0][0].detectors
    requests = stopped_at(observe_loopguard, observe_loopguard.spans("openai.chat"))
    assert requests is not None and requests <= 4, requests
    assert errors("loopguard.internal_errors") == 0


def test_core_only_a_productive_loop_gets_no_stop(observe_loopguard, content):
    errors = metric_counter(observe_loopguard)

    with observe_loopguard.app_tracer().start_as_current_span("agent loop"):
        assert productive().run() == ANSWER

    chats = observe_loopguard.spans("openai.chat")
    assert len(chats) == 5
    assert ("gen_ai.input.messages" in chats[-1].attributes) is content
    assert _stops(observe_loopguard) == []
    assert errors("loopguard.internal_errors") == 0


def test_core_only_two_invocations_under_one_application_span_are_two_runs(observe_loopguard):
    tracer = observe_loopguard.app_tracer()

    with tracer.start_as_current_span("handle request"):
        for _ in range(2):
            with get_guard().agent_run(tracer, "assistant"):
                looping().run()

    assert len({event.run_id for _, event in _stops(observe_loopguard)}) == 2


@pytest.mark.parametrize("invocations", [1, 2])
def test_beside_our_package_the_loop_is_interrupted_after_at_most_four_executions(
    with_openai_package, invocations
):
    harness = with_openai_package(mode="enforce")

    assert_interrupted_in_each_invocation(harness, invocations, looping_in_a_run(harness))


def test_beside_our_package_the_productive_run_counts_the_real_tokens(with_openai_package):
    harness = with_openai_package(mode="enforce")

    with get_guard().agent_run(harness.app_tracer(), "assistant"):
        assert productive().run() == ANSWER

    (run,) = harness.named("invoke_agent assistant")
    assert run.attributes["gen_ai.usage.input_tokens"] == 5 * 40  # five turns, once each
    assert run.attributes["gen_ai.usage.output_tokens"] == 5 * 10
    assert harness.decision_events("stop") == []


def test_beside_our_package_a_token_budget_stops_at_the_turn_over_it(with_openai_package):
    harness = with_openai_package(mode="enforce", token_budget=120)
    loop = productive()

    with pytest.raises(LoopGuardInterrupt) as raised:
        with get_guard().agent_run(harness.app_tracer(), "assistant"):
            loop.run()

    assert raised.value.decision.detectors == ("budget",)
    assert len(loop.api.requests) == 3  # 50 tokens a turn: the third goes over 120


def test_core_only_tokens_are_counted_from_their_chat_spans(make_loopguard):
    harness = make_loopguard(mode="observe", token_budget=120)

    with harness.app_tracer().start_as_current_span("agent loop"):
        productive().run()

    assert stopped_at(harness, harness.spans("openai.chat"), "budget") == 3
