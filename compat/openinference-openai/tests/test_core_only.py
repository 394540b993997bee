"""Our core alone beside OpenInference's OpenAI instrumentation, observe mode: a hand-written
loop has only its ``ChatCompletion`` LLM spans; the tools' calls and results are read from the
next request's ``llm.input_messages.*`` (content shown)."""

from __future__ import annotations

from hand_written import ANSWER, LOOP_TURNS, looping, productive
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.compat_checks import executions_at_first_stop, openinference_spans


def test_a_looping_loop_is_stopped_within_the_fourth_call(observe_loopguard) -> None:
    count = metric_counter(observe_loopguard)
    loop = looping()
    at_stop = executions_at_first_stop(observe_loopguard, lambda: len(loop.executions))
    # the application's own span around its loop (else each request is a trace of its own)
    with observe_loopguard.app_tracer().start_as_current_span("agent loop"):
        loop.run()

    assert loop.answer == "I gave up."  # observe mode: recorded, not enforced
    assert len(loop.executions) == LOOP_TURNS
    assert observe_loopguard.tool_spans() == []  # model spans only
    assert at_stop() <= 4
    assert count("loopguard.internal_errors") == 0


def test_a_productive_loop_gets_no_stop(observe_loopguard, hidden: bool) -> None:
    count = metric_counter(observe_loopguard)
    with observe_loopguard.app_tracer().start_as_current_span("agent loop"):
        assert productive().run() == ANSWER
    spans = openinference_spans(observe_loopguard, "LLM")
    assert len(spans) == 5
    assert ("llm.input_messages.0.message.role" in spans[-1].attributes) is not hidden
    assert not observe_loopguard.decision_events("stop")
    assert count("loopguard.internal_errors") == 0


def test_a_looping_loop_with_content_hidden_is_counted_not_claimed(
    observe_loopguard, content_hidden
) -> None:
    """Hidden: no request messages, no answer text; the turns still count (budgets work),
    nothing says the calls were the same."""
    count = metric_counter(observe_loopguard)
    with observe_loopguard.app_tracer().start_as_current_span("agent loop"):
        looping().run()
    assert not observe_loopguard.decision_events("stop")
    assert count("loopguard.internal_errors") == 0
