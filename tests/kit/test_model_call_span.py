"""kit.model_call_span: a model SDK package's ``chat`` span, checked, ended and reported."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry import trace

from otel_loopguard import LoopGuardInterrupt, agent_run, current_run
from otel_loopguard.kit import model_call_span as call_span
from otel_loopguard.kit.openai_format import ModelAnswer


def _answer(output_tokens: int = 5, response_id: str | None = "resp-1") -> ModelAnswer:
    return ModelAnswer(
        response_id=response_id,
        response_model="gpt-test",
        finish_reasons=["stop"],
        input_tokens=10,
        output_tokens=output_tokens,
        has_text=True,
    )


def _steps() -> int:
    from otel_loopguard import get_guard

    handle = current_run()
    assert handle is not None
    return get_guard().monitor.run_snapshot(handle.run_id).counters.steps


def test_an_answered_call_puts_its_attributes_and_counts_once(make_kit: Any) -> None:
    kit = make_kit()
    with agent_run("a", tracer=kit.tracer):
        span = kit.tracer.start_span("chat gpt-test", kind=trace.SpanKind.CLIENT)
        call_span.preflight_in_span(kit.guard, span, 100)
        answer = _answer()
        call_span.set_answer_attributes(span, answer)
        call_span.report_answer(kit.guard, span, answer, "gpt-test")
        span.end()
        assert _steps() == 1  # the processor does not read the reported span again
    (chat,) = kit.spans("chat gpt-test")
    assert chat.attributes["gen_ai.response.id"] == "resp-1"
    assert chat.attributes["gen_ai.usage.output_tokens"] == 5
    assert chat.attributes["gen_ai.response.finish_reasons"] == ("stop",)


def test_a_stopped_run_ends_the_span_as_interrupted_before_anything_is_sent(
    make_kit: Any,
) -> None:
    kit = make_kit(mode="enforce", token_budget=10)
    with agent_run("a", tracer=kit.tracer):
        first = kit.tracer.start_span("chat first")
        with pytest.raises(LoopGuardInterrupt):  # the report passes the budget: STOP
            call_span.report_answer(kit.guard, first, _answer(output_tokens=20), None)
        first.end()
        second = kit.tracer.start_span("chat second")
        with pytest.raises(LoopGuardInterrupt):
            call_span.preflight_in_span(kit.guard, second, 0)
    (vetoed,) = kit.spans("chat second")  # ended once, by the veto
    assert vetoed.attributes["error.type"] == "LoopGuardInterrupt"
    assert vetoed.status.status_code.name == "ERROR"
    (reported,) = kit.spans("chat first")
    assert any(event.name == "loopguard.decision" for event in reported.events)


def test_a_failing_call_ends_its_span_with_the_error_and_the_error_goes_on(make_kit: Any) -> None:
    kit = make_kit()
    span = kit.tracer.start_span("chat m")
    seen: list[Any] = []
    with pytest.raises(ConnectionError):
        with call_span.InCallSpan(span, lambda error: call_span.end_failed(span, error)):
            seen.append(trace.get_current_span())
            raise ConnectionError("reset by peer")
    assert seen == [span]
    (failed,) = kit.spans("chat m")
    assert failed.attributes["error.type"] == "ConnectionError"
    assert failed.status.description == "reset by peer"


def test_our_internal_errors_are_counted_and_never_raised(
    make_kit: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    kit = make_kit()
    counted = kit.internal_errors(monkeypatch)
    call_span.count_internal_error(lambda: kit.guard, "pkg.call", ValueError("x"))

    def no_guard() -> Any:
        raise RuntimeError("no guard")

    call_span.count_internal_error(no_guard, "pkg.call", ValueError("y"))  # only logged
    assert counted == ["pkg.call"]
