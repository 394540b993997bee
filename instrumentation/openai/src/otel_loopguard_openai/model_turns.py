"""wrapt wrappers around the OpenAI SDK's request methods.

One wrapper per API shape (Chat Completions, Responses) serves the sync and async clients
and the streamed and non-streamed calls. Each call:

1. runs the pre-flight check BEFORE the request is built and sent, so in enforce mode a
   stopped run, an exceeded token or cost budget, max steps or a timeout raise
   ``LoopGuardInterrupt`` and no request leaves the process;
2. makes a ``chat {model}`` CLIENT span per the GenAI conventions, unless another
   OpenAI instrumentation (opentelemetry-instrumentation-openai-v2, OpenLLMetry) already
   makes one for this call: then the span processor observes theirs and we only enforce;
3. reports the answer (usage, finish reasons, the tool calls the model asked for) to the
   guard, which feeds the monitor and puts any decision on the span before it ends;
4. in enforce mode, delivers a replan's recommendation waiting for the run (the read-only
   nudge, the shell hint, a continuation prompt...) into this request, once, as a user
   message at the end of ``messages`` (Chat Completions) or ``input`` (Responses); see
   :mod:`otel_loopguard_openai.recommendations`, which also re-asks a truncated or empty
   non-streamed Chat Completion the caller's loop would end its turn on.

Nothing here may break the caller: internal errors are caught and counted by the guard;
only ``LoopGuardInterrupt`` (enforce mode) and the SDK's own exceptions reach the caller.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Tracer

from otel_loopguard import LoopGuardInterrupt
from otel_loopguard.kit import model_call_span as call_span
from otel_loopguard.kit.model_turn import reasking_wrapper
from otel_loopguard.kit.openai_format import (
    ApiShape,
    ModelAnswer,
    chat_span_attributes,
    chat_span_name,
    output_token_cap,
)
from otel_loopguard.kit.recommendations import (
    Again,
    Deliver,
    Join,
    can_deliver,
    delivered_arguments,
)
from otel_loopguard.kit.scoped_call import PlainScope, scoped_wrapper
from otel_loopguard.kit.streamed_answer import DoneCallback
from otel_loopguard_openai.recommendations import PACKAGE
from otel_loopguard_openai.streams import ObservedAsyncStream, ObservedStream

PROVIDER = "openai"
# wrapper modules of other instrumentations that already make a GenAI span per request
_OTHER_OPENAI_INSTRUMENTATIONS = ("opentelemetry.instrumentation.openai",)


def _other_instrumentation_wraps(wrapped: Any) -> bool:
    """True when the next callable in the chain is another OpenAI instrumentation's wrapper.

    wrapt keeps the wrapper function on ``_self_wrapper``; walking ``__wrapped__`` finds it
    whichever order the instrumentors ran in.
    """
    seen = 0
    current = wrapped
    while current is not None and seen < 8:
        wrapper = getattr(current, "_self_wrapper", None)
        module = getattr(wrapper, "__module__", "") or ""
        if module.startswith(_OTHER_OPENAI_INSTRUMENTATIONS):
            return True
        current = getattr(current, "__wrapped__", None)
        seen += 1
    return False


# instrumentations of a model gateway above the SDK: their current ``chat`` span is this
# request's span whatever provider it names (otel-loopguard-litellm: LiteLLM sends
# ``azure/...`` requests through ``chat.completions.create``)
_GATEWAY_SCOPES = ("otel_loopguard_litellm",)


def _active_genai_client_span() -> bool:
    """True inside another instrumentation's ``chat`` span for this same request."""
    span = trace.get_current_span()
    attributes = getattr(span, "attributes", None)
    if not span.is_recording() or not attributes:
        return False
    if getattr(span, "kind", None) is not SpanKind.CLIENT:
        return False
    if attributes.get("gen_ai.operation.name") is None:
        return False
    scope = getattr(getattr(span, "instrumentation_scope", None), "name", None)
    provider = attributes.get("gen_ai.provider.name") or attributes.get("gen_ai.system")
    return provider == PROVIDER or scope in _GATEWAY_SCOPES


def _server_attributes(instance: Any) -> dict[str, Any]:
    try:
        url = instance._client.base_url
        attributes: dict[str, Any] = {"server.address": url.host}
        if url.port:
            attributes["server.port"] = url.port
        return attributes
    except Exception:
        return {}


class ModelCallRecorder:
    """The span and guard side of one request; knows nothing about the two API shapes."""

    def __init__(self, tracer: Tracer, guard_provider: Callable[[], Any]) -> None:
        self._tracer = tracer
        self._guard_provider = guard_provider

    def start(
        self, wrapped: Any, instance: Any, request_model: str | None, request: dict[str, Any]
    ) -> Span | None:
        """Pre-flight, then the span (``None`` when another instrumentation makes it).

        Raises only ``LoopGuardInterrupt``; any internal error is logged and the call goes
        on uninstrumented.
        """
        try:
            return self._start(wrapped, instance, request_model, request)
        except LoopGuardInterrupt:
            raise
        except Exception as exc:
            self._internal_error("openai.start", exc)
            return None

    def _start(
        self, wrapped: Any, instance: Any, request_model: str | None, request: dict[str, Any]
    ) -> Span | None:
        guard = self._guard_provider()
        expected_tokens = output_token_cap(request)
        if _other_instrumentation_wraps(wrapped) or _active_genai_client_span():
            guard.preflight_llm(expected_tokens=expected_tokens)
            return None
        attributes = chat_span_attributes(PROVIDER, request_model, request, expected_tokens)
        attributes.update(_server_attributes(instance))
        span = self._tracer.start_span(
            chat_span_name(request_model), kind=SpanKind.CLIENT, attributes=attributes
        )
        call_span.preflight_in_span(guard, span, expected_tokens)
        return span

    def _internal_error(self, where: str, exc: Exception) -> None:
        call_span.count_internal_error(self._guard_provider, where, exc)

    def guard(self) -> Any:
        return self._guard_provider()

    def deliver(
        self,
        deliver: Deliver,
        instance: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        span: Span | None,
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The arguments the request is sent with: the caller's, or new ones carrying the
        recommendation waiting for the run (recorded on ``span``, our ``chat`` span, or
        the current span when another instrumentation makes the request's span). Called
        after the pre-flight check; never raises."""
        try:
            guard = self._guard_provider()
            return delivered_arguments(guard, deliver, PACKAGE, args, kwargs, instance, span)
        except Exception as exc:
            self._internal_error("openai.deliver", exc)
            return args, kwargs

    def fail(self, span: Span | None, error: BaseException) -> None:
        if span is not None:
            call_span.end_failed(span, error)

    def finish_result(
        self, span: Span | None, request_model: str | None, shape: ApiShape, result: Any
    ) -> None:
        """``finish`` for a non-streamed answer; a shape we cannot read is an internal error."""
        if span is None:
            return
        try:
            answer = _parse_result(shape, result)
        except Exception as exc:
            self._internal_error("openai.parse", exc)
            span.end()
            return
        self.finish(span, request_model, answer)

    def finish(
        self, span: Span | None, request_model: str | None, answer: ModelAnswer | None
    ) -> None:
        """Record the answer on the span, tell the guard, end the span; may raise STOP."""
        if span is None:
            return
        if answer is None:
            span.end()
            return
        try:
            call_span.set_answer_attributes(span, answer)
            call_span.report_answer(self._guard_provider(), span, answer, request_model)
        except LoopGuardInterrupt:
            raise
        except Exception as exc:
            self._internal_error("openai.finish", exc)
        finally:
            span.end()

    def calling(self, span: Span) -> call_span.InCallSpan:
        """``with`` around the wrapped call: its span current, a failure ending it."""
        return call_span.InCallSpan(span, lambda error: self.fail(span, error))

    def returned(
        self,
        span: Span,
        request_model: str | None,
        shape: ApiShape,
        stream_proxy: type[ObservedStream | ObservedAsyncStream] | None,
        result: Any,
    ) -> Any:
        """What the caller gets: a stream (in ``stream_proxy``) to be judged at its end, or
        the answer, judged."""
        if stream_proxy is not None:
            on_done = self.stream_callback(span, request_model)
            return stream_proxy(result, shape.folder(), on_done)
        self.finish_result(span, request_model, shape, result)
        return result

    def stream_callback(self, span: Span | None, request_model: str | None) -> DoneCallback:
        def on_done(
            answer: ModelAnswer | None, error: BaseException | None, complete: bool, _below: bool
        ) -> None:
            if error is not None:
                self.fail(span, error)
            elif complete and answer is not None:
                self.finish(span, request_model, answer)
            elif span is not None:  # the caller stopped reading
                call_span.end_unfinished(span, answer)

        return on_done


def _parse_result(shape: ApiShape, result: Any) -> ModelAnswer | None:
    """The answer; for a ``with_raw_response`` call, the one its ``parse()`` gives.

    A raw response of a call that does not stream has its body read already, and the SDK
    caches what ``parse()`` returns, so the caller's own ``parse()`` gets the very object
    read here. Frameworks call the API this way (CrewAI's OpenAI provider always does):
    left unjudged, the call's span went to the span processor as a model turn without
    usage, which the framework's own report then took as already counted, and the tokens
    were lost. A streamed raw response and ``with_streaming_response`` (body not read yet,
    and the caller's to read) get their span and pre-flight check but no judgement.
    """
    if not hasattr(result, "choices") and not hasattr(result, "output"):
        result = _parsed_raw_response(result)
        if result is None:
            return None
    return shape.read(result)


def _parsed_raw_response(result: Any) -> Any:
    """``result.parse()`` of a non-streamed ``LegacyAPIResponse`` (``with_raw_response``);
    ``None`` for anything else."""
    if type(result).__name__ != "LegacyAPIResponse" or getattr(result, "_stream", True):
        return None
    parsed = result.parse()
    return parsed if hasattr(parsed, "choices") or hasattr(parsed, "output") else None


class _DeliveringScope(PlainScope):
    """A request whose span another OpenAI instrumentation makes: we only deliver a waiting
    recommendation into it (the pre-flight check has run)."""

    __slots__ = ("_deliver", "_instance", "_recorder")

    def __init__(self, recorder: ModelCallRecorder, deliver: Deliver, instance: Any) -> None:
        self._recorder = recorder
        self._deliver = deliver
        self._instance = instance

    def request(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return self._recorder.deliver(self._deliver, self._instance, args, kwargs, None)


class _RequestScope(PlainScope):
    """One request of the wrapped method (a :class:`~otel_loopguard.kit.scoped_call.Scope`):
    the span current around the call, a failure ending it, a waiting recommendation
    delivered into the request, the answer (or the stream that will bring it) judged once
    the call returned."""

    __slots__ = (
        "_calling",
        "_deliver",
        "_instance",
        "_kwargs",
        "_recorder",
        "_request_model",
        "_shape",
        "_span",
    )

    def __init__(
        self,
        recorder: ModelCallRecorder,
        shape: ApiShape,
        span: Span,
        request_model: str | None,
        kwargs: dict[str, Any],
        deliver: Deliver,
        instance: Any,
    ) -> None:
        self._recorder = recorder
        self._shape = shape
        self._span = span
        self._request_model = request_model
        self._kwargs = kwargs
        self._deliver = deliver
        self._instance = instance
        self._calling = recorder.calling(span)

    def __enter__(self) -> None:
        self._calling.__enter__()

    def request(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        # with the span current (entered): the delivery is recorded on it
        return self._recorder.deliver(self._deliver, self._instance, args, kwargs, self._span)

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        self._calling.__exit__(exc_type, exc, tb)

    def after(self, result: Any) -> Any:
        proxy: type[ObservedStream | ObservedAsyncStream] | None = None
        if self._kwargs.get("stream") is True:
            if hasattr(result, "__next__"):
                proxy = ObservedStream
            elif hasattr(result, "__anext__"):
                proxy = ObservedAsyncStream
        return self._recorder.returned(self._span, self._request_model, self._shape, proxy, result)


def request_wrapper(
    recorder: ModelCallRecorder,
    shape: ApiShape,
    *,
    asynchronous: bool,
    deliver: Deliver,
    again: Again | None = None,
    join: Join | None = None,
) -> Callable[..., Any]:
    """The wrapper of one request method, sync or async (``asynchronous``: the SDK's
    ``required_args`` decorator hides that its async methods are coroutine functions).
    ``deliver`` adds a waiting recommendation to the request; ``again`` / ``join`` (Chat
    Completions ``create``) ask again after a truncated or empty answer the caller would
    end its turn on (the kit's :func:`~otel_loopguard.kit.model_turn.reasking_wrapper`)."""
    can_deliver(PACKAGE)

    def open_scope(
        call: tuple[Any, Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> PlainScope | None:
        wrapped, instance = call
        request_model = kwargs.get("model") if isinstance(kwargs.get("model"), str) else None
        span = recorder.start(wrapped, instance, request_model, kwargs)
        if span is None:
            return _DeliveringScope(recorder, deliver, instance)
        return _RequestScope(recorder, shape, span, request_model, kwargs, deliver, instance)

    scoped = scoped_wrapper(open_scope, asynchronous=asynchronous)

    def wrapper(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        # the scope is opened with the wrapped method too: the pre-flight looks at what it wraps
        return scoped(wrapped, (wrapped, instance), args, kwargs)

    if again is None:
        return wrapper
    return reasking_wrapper(wrapper, again, join, PACKAGE, asynchronous)
