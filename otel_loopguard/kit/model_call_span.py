"""The span side of one instrumented model call, shared by the model SDK packages.

A package that wraps a model SDK's request method (``openai``, ``litellm``) makes a
``chat`` CLIENT span per call and does the same few things with it: run the pre-flight
check with the span current (a STOP ends the span as interrupted before anything is sent),
end it with the error of a failed call, put the answer's GenAI attributes on it, hand the
answer to the guard with the span current (so the decision lands on the span before it
ends), and count its own internal errors without letting them reach the caller. Written
once here, so every package's spans and reports agree.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode

from otel_loopguard.engine.interrupt import LoopGuardInterrupt
from otel_loopguard.kit.openai_format import ModelAnswer

logger = logging.getLogger(__name__)


def current(span: Span) -> Any:
    """Make ``span`` current without letting ``use_span`` record or judge exceptions."""
    return trace.use_span(
        span, end_on_exit=False, record_exception=False, set_status_on_exception=False
    )


class InCallSpan:
    """``with`` around the wrapped SDK call, sync or across its ``await``: the call's span
    is current, and a call that raises is handed to ``on_error`` (which ends the span with
    the error) before the exception goes on to the caller."""

    __slots__ = ("_on_error", "_scope", "_span")

    def __init__(self, span: Span, on_error: Callable[[BaseException], None]) -> None:
        self._span = span
        self._on_error = on_error
        self._scope: Any = None

    def __enter__(self) -> None:
        self._scope = current(self._span)
        self._scope.__enter__()

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        self._scope.__exit__(exc_type, exc, tb)
        if exc is not None:
            self._on_error(exc)


def preflight_in_span(guard: Any, span: Span, expected_tokens: int) -> None:
    """``guard.preflight_llm`` with ``span`` current; a STOP (enforce mode) ends the span as
    interrupted and raises ``LoopGuardInterrupt``: the request is never sent."""
    try:
        with current(span):
            guard.preflight_llm(expected_tokens=expected_tokens, span=span)
    except LoopGuardInterrupt:
        span.set_attribute("error.type", LoopGuardInterrupt.__name__)
        span.set_status(Status(StatusCode.ERROR, "interrupted by otel-loopguard"))
        span.end()
        raise


def end_failed(span: Span, error: BaseException) -> None:
    """End the span of a call that raised, with the error's type (``error.type``)."""
    span.set_attribute("error.type", type(error).__qualname__)
    span.set_status(Status(StatusCode.ERROR, str(error)[:200] or type(error).__name__))
    span.end()


def set_answer_attributes(span: Span, answer: ModelAnswer) -> None:
    """The answer's GenAI attributes (response id and model, finish reasons, usage)."""
    set_response_attributes(
        span,
        answer.response_id,
        answer.response_model,
        answer.finish_reasons,
        answer.input_tokens,
        answer.output_tokens,
    )


def end_unfinished(span: Span, answer: ModelAnswer | None) -> None:
    """End the span of a streamed answer the caller stopped reading: what was read of it
    recorded, nothing judged (the answer is incomplete)."""
    try:
        if answer is not None:
            set_answer_attributes(span, answer)
    finally:
        span.end()


def set_response_attributes(
    span: Span,
    response_id: str | None,
    response_model: str | None,
    finish_reasons: list[str] | None,
    input_tokens: int | None,
    output_tokens: int | None,
) -> None:
    """A model response's GenAI attributes, each only when known: the one place that names
    them for every model SDK package (an SDK's own answer type need not be a ModelAnswer)."""
    if response_model:
        span.set_attribute("gen_ai.response.model", response_model)
    if response_id:
        span.set_attribute("gen_ai.response.id", response_id)
    if finish_reasons:
        span.set_attribute("gen_ai.response.finish_reasons", finish_reasons)
    if input_tokens is not None:
        span.set_attribute("gen_ai.usage.input_tokens", input_tokens)
    if output_tokens is not None:
        span.set_attribute("gen_ai.usage.output_tokens", output_tokens)


def report_answer(guard: Any, span: Span, answer: ModelAnswer, request_model: str | None) -> None:
    """Hand one answer to the guard (``LoopGuard.observe_llm_response``) with its span
    current, so the decision lands on the span before it ends; may raise STOP. Its response
    id makes it count once when another instrumentation's span reports the same answer
    (LiteLLM's own OpenTelemetry callback, say)."""
    with current(span):
        guard.observe_llm_response(
            span=span,
            model=answer.response_model or request_model,
            finish_reason=answer.finish_reason,
            input_tokens=answer.input_tokens,
            output_tokens=answer.output_tokens,
            requested_tool_calls=answer.tool_calls,
            empty=answer.empty,
            response_id=answer.response_id,
            text=answer.text or None,
        )


def count_internal_error(guard_provider: Callable[[], Any], where: str, exc: Exception) -> None:
    """Counted in ``loopguard.internal_errors`` and logged once, by the guard's telemetry
    (only logged when even the guard cannot be reached)."""
    try:
        guard_provider().telemetry.internal_error(where, exc)
    except Exception:
        logger.debug("otel-loopguard: internal error in %s", where, exc_info=True)
