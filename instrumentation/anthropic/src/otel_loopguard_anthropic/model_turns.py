"""The model turns: one Messages API request, from its pre-flight to the turn it produced.

Hook points: the client's ``request`` and the SDK's span start. ``messages.create`` (with
or without ``stream=True``) and ``messages.stream`` all reach ``SyncAPIClient.request`` /
``AsyncAPIClient.request`` with a ``POST /v1/messages`` (``messages.stream`` does not go
through ``create``), as do the beta Messages API and the SDK's tool runner; wrapping
``request`` and keeping only that endpoint sees every model call once, before anything is
sent. ``start_api_call_span`` is where the SDK starts its own span for the call, so we can
tell the span processor not to feed that one.

Delivery: in ``enforce`` mode a replan's recommendation waiting for the run goes into the
request's body after the pre-flight check (:mod:`.recommendations`), for every request
shape alike (created, streamed, sync, async, beta); a non-streamed answer cut off at
``max_tokens`` or an empty ``end_turn`` after failing tools is asked again inside the same
``request`` call, so the caller gets the joined (or the new) ``Message``.

Where the span comes from: since 2.x the Anthropic SDK makes its own CLIENT span per API
call (``anthropic.messages.create``, ``gen_ai.operation.name=chat``, usage, stop reason)
unless tracing is off for the client (``ANTHROPIC_OPEN_TELEMETRY=false`` or
``open_telemetry=False``). When it does, we make no second span: we mark the SDK's span as
fed (the span processor would otherwise count the same tokens again) and feed the turn
ourselves, because only we see the tool calls the model asked for (the SDK records no
content by default). When the SDK makes none, we make a GenAI ``chat {model}`` span.
"""

from __future__ import annotations

import contextvars
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from otel_loopguard import LoopGuard, LoopGuardInterrupt, current_run, get_guard
from otel_loopguard.kit.model_call_span import set_response_attributes
from otel_loopguard.kit.model_turn import ModelCall as RequestCall
from otel_loopguard.kit.recommendations import (
    can_deliver,
    deliver_waiting,
    reask_request,
    reasks_allowed,
)
from otel_loopguard.kit.scoped_call import PlainScope, Wrapper, scoped_wrapper
from otel_loopguard_anthropic import recommendations
from otel_loopguard_anthropic.messages import Turn, turn_from_message
from otel_loopguard_anthropic.streams import AsyncObservedStream, ObservedStream

PROVIDER = "anthropic"
MESSAGES_PATH = "/v1/messages"

# the request in flight in this context, for the SDK-span hook (set only around the send)
IN_FLIGHT: contextvars.ContextVar[ModelCall | None] = contextvars.ContextVar(
    "otel_loopguard_anthropic_call", default=None
)


class InputTokensSeen:
    """Last input token count per run, bounded (least recently used dropped).

    A conversation only grows, so the previous turn's input is a lower bound of the next
    one's: a request that cannot fit the token budget with that many is vetoed before it is
    sent, and one that might fit is never vetoed on a guess.
    """

    def __init__(self, capacity: int = 4096) -> None:
        self._seen: OrderedDict[str, int] = OrderedDict()
        self._capacity = capacity
        self._lock = threading.Lock()

    def get(self, run_id: str) -> int:
        with self._lock:
            return self._seen.get(run_id, 0)

    def put(self, run_id: str, tokens: int) -> None:
        with self._lock:
            self._seen[run_id] = tokens
            self._seen.move_to_end(run_id)
            if len(self._seen) > self._capacity:
                self._seen.popitem(last=False)


INPUT_TOKENS_SEEN = InputTokensSeen()


class ModelCall:
    """The lifecycle of one request; every method is safe to call once, in order."""

    __slots__ = (
        "_ended",
        "_guard",
        "_own",
        "_pending",
        "_run_id",
        "_sdk_span",
        "_tracer",
        "request",
    )

    def __init__(self, guard: LoopGuard, tracer: Tracer, request: dict[str, Any]) -> None:
        self._guard = guard
        self._tracer = tracer
        self.request = request
        self._own: Span | None = None
        self._sdk_span: Span | None = None
        self._run_id: str | None = None
        self._ended = False
        self._pending: recommendations.PendingSpan | None = None

    # -- before the request -----------------------------------------------------------------

    def preflight(self) -> None:
        """Budgets, max steps, timeout, a stopped run: raises before anything is sent.

        A request made outside any trace or agent run belongs to no run yet (its own span
        will start one), so there is nothing to check it against.
        """
        guard = self._guard
        try:
            if not _in_a_run():
                return
            self._run_id = guard.resolve_run().run_id
            expected = INPUT_TOKENS_SEEN.get(self._run_id)
        except Exception as exc:
            guard.telemetry.internal_error("anthropic.preflight", exc)
            return
        guard.preflight_llm(expected_tokens=expected)

    def start_own_span(self, client: Any) -> Span | None:
        """Our ``chat {model}`` span, unless the SDK makes its own for this client."""
        if getattr(client, "_tracer", None) is not None:
            return None  # the SDK's span is coming; see sdk_span_started
        request = self.request
        model = request.get("model")
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": PROVIDER,
        }
        if isinstance(model, str):
            attributes["gen_ai.request.model"] = model
        max_tokens = request.get("max_tokens")
        if isinstance(max_tokens, int):
            attributes["gen_ai.request.max_tokens"] = max_tokens
        for key in ("temperature", "top_p", "top_k"):
            value = request.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                attributes[f"gen_ai.request.{key}"] = value
        base_url = getattr(client, "base_url", None)
        host = getattr(base_url, "host", None)
        if isinstance(host, str) and host:
            attributes["server.address"] = host
        name = f"chat {model}" if isinstance(model, str) else "chat"
        self._own = self._tracer.start_span(name, kind=SpanKind.CLIENT, attributes=attributes)
        return self._own

    @property
    def guard(self) -> LoopGuard:
        return self._guard

    def deliver(self, client: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The arguments to send: the caller's, or new ones whose body carries the run's
        waiting recommendation. The delivery is recorded on our span, or on the SDK's once it
        starts (inside ``request``, after this)."""
        if not self._guard.deliveries.any_waiting():  # the common case: one test
            return args, kwargs
        call = RequestCall(client, args, kwargs)
        span: Any = self._own
        if span is None:
            span = self._pending = recommendations.PendingSpan()
        delivered = deliver_waiting(
            self._guard, call, recommendations.deliver, recommendations.PACKAGE, span=span
        )
        if delivered is None:
            self._pending = None
            return args, kwargs
        body = getattr(recommendations.request_options(call), "json_data", None)
        if isinstance(body, dict):
            self.request = body
        return call.args, call.kwargs

    def sdk_span_started(self, span: Span | None) -> None:
        """The SDK started its span for this request: we feed it, so the processor must not."""
        if span is None or self._own is not None:
            return
        self._sdk_span = span
        self._guard.mark_managed(span)
        self.replay_delivery(span)

    def replay_delivery(self, span: Span | None = None) -> None:
        """A delivery recorded before the SDK's span started goes on it (or, when the SDK
        made none, on the span current at delivery)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            try:
                pending.replay(span)
            except Exception as exc:
                self._guard.telemetry.internal_error("anthropic.deliver", exc)

    def current(self) -> Any:
        """Make our span current while the request is sent (HTTP spans become children)."""
        if self._own is None:
            return _NO_SPAN
        return trace.use_span(self._own, end_on_exit=False)

    # -- after the response -----------------------------------------------------------------

    def finish(self, turn: Turn) -> None:
        """Feed the turn (decision event on the open span), end our span, raise at STOP."""
        if self._ended:
            return
        self._ended = True
        guard = self._guard
        # the decision event goes on an open span of this request: ours, or the SDK's while
        # it is still open (streams); an SDK span that already ended is only made current,
        # for the run identity and a decision span beside it
        span = self._own
        sdk_span = self._sdk_span
        if span is None and sdk_span is not None and sdk_span.is_recording():
            span = sdk_span
        ended_sdk_span = None
        if span is None and sdk_span is not None and not _in_a_run():
            ended_sdk_span = sdk_span  # else the decision goes on the run's open agent span
        try:
            if self._own is not None:
                _set_response_attributes(self._own, turn)
            run_id = self._run_id or guard.resolve_run(span or ended_sdk_span).run_id
            if turn.input_tokens:
                INPUT_TOKENS_SEEN.put(run_id, turn.input_tokens)
        except Exception as exc:
            guard.telemetry.internal_error("anthropic.response", exc)
        context = trace.use_span(ended_sdk_span) if ended_sdk_span is not None else _NO_SPAN
        try:
            with context:
                guard.observe_llm_response(
                    model=turn.model or self.request.get("model"),
                    finish_reason=turn.stop_reason,
                    input_tokens=turn.input_tokens,
                    output_tokens=turn.output_tokens,
                    empty=turn.empty,
                    requested_tool_calls=turn.tool_calls,
                    span=span,
                    text=turn.text or None,
                )
        except LoopGuardInterrupt as interrupt:
            self._end_own(interrupt)
            raise
        self._end_own(None)

    def release(self) -> None:
        """The SDK's span of this request has ended: the processor needs our mark no more."""
        span = self._sdk_span
        if span is not None and not span.is_recording():
            self._sdk_span = None
            unmark = getattr(self._guard, "unmark_managed", None)
            if unmark is not None:
                unmark(span)

    def fail(self, error: BaseException) -> None:
        """The request failed or the stream ended before the message did."""
        if self._ended:
            return
        self._ended = True
        self._end_own(error)

    def _end_own(self, error: BaseException | None) -> None:
        span = self._own
        if span is None:
            return
        try:
            if isinstance(error, LoopGuardInterrupt):
                span.set_attribute("error.type", "LoopGuardInterrupt")
                span.set_status(Status(StatusCode.ERROR, str(error)))
            elif error is not None:
                span.set_attribute("error.type", type(error).__qualname__)
                span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
        except Exception as exc:  # pragma: no cover - defensive
            self._guard.telemetry.internal_error("anthropic.span", exc)
        finally:
            span.end()


def _in_a_run() -> bool:
    """Whether this code runs inside an agent run or at least a trace (a run's scope)."""
    return current_run() is not None or trace.get_current_span().get_span_context().is_valid


def _set_response_attributes(span: Span, turn: Turn) -> None:
    set_response_attributes(
        span,
        turn.response_id,
        turn.model,
        [turn.stop_reason] if turn.stop_reason else None,
        turn.input_tokens,
        turn.output_tokens,
    )


class _NoSpan:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


_NO_SPAN = _NoSpan()


def messages_request(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON body of a Messages API request, or None for any other API call."""
    options = args[1] if len(args) > 1 else kwargs.get("options")
    url = getattr(options, "url", None)
    method = getattr(options, "method", None)
    if not isinstance(url, str) or not isinstance(method, str) or method.lower() != "post":
        return None
    if url.split("?", 1)[0] != MESSAGES_PATH:
        return None
    body = getattr(options, "json_data", None)
    return body if isinstance(body, dict) else {}


def _start(tracer: Tracer, client: Any, args: Any, kwargs: Any) -> ModelCall | None:
    """Pre-flight (may raise LoopGuardInterrupt) and our span; None for other endpoints."""
    request = messages_request(args, kwargs)
    if request is None:
        return None
    guard = get_guard()
    if not guard.config.enabled:
        return None
    call = ModelCall(guard, tracer, request)
    call.preflight()
    try:
        call.start_own_span(client)
    except Exception as exc:  # never break the request for our bookkeeping
        guard.telemetry.internal_error("anthropic.span", exc)
    return call


def _settle(call: ModelCall, result: Any) -> Any:
    """A parsed message is fed now; a stream is fed as it is read."""
    from anthropic import AsyncStream, Stream

    if isinstance(result, Stream):
        return ObservedStream(result, call)
    if isinstance(result, AsyncStream):
        return AsyncObservedStream(result, call)
    try:
        turn = turn_from_message(result)
    except Exception as exc:  # a raw response or an unexpected type: nothing to feed
        get_guard().telemetry.internal_error("anthropic.response", exc)
        call.fail(exc)
        call.release()
        return result
    try:
        call.finish(turn)
    finally:
        call.release()
    return result


class _RequestScope(PlainScope):
    """One Messages request (a :class:`~otel_loopguard.kit.scoped_call.Scope`): in flight
    and our span current while it is sent, a failure ending it, the answer (or the stream
    that brings it) fed once the call returned."""

    __slots__ = ("_call", "_client", "_current", "_token")

    def __init__(self, call: ModelCall, client: Any) -> None:
        self._call = call
        self._client = client
        self._current: Any = None
        self._token: Any = None

    def __enter__(self) -> None:
        self._token = IN_FLIGHT.set(self._call)
        self._current = self._call.current()
        self._current.__enter__()

    def request(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The arguments the request is sent with (after the pre-flight check): a waiting
        recommendation is delivered into a copy of the body."""
        return self._call.deliver(self._client, args, kwargs)

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        try:
            self._call.replay_delivery()
            self._current.__exit__(exc_type, exc, tb)
            if exc is not None:
                self._call.fail(exc)
                self._call.release()
        finally:
            IN_FLIGHT.reset(self._token)

    def after(self, result: Any) -> Any:
        return _settle(self._call, result)


def request_wrapper(tracer: Tracer, *, asynchronous: bool) -> Wrapper:
    """Wrap ``SyncAPIClient.request`` (``asynchronous=False``) or ``AsyncAPIClient.request``:
    each Messages request in its scope, then the re-asks of a truncated or empty answer."""
    can_deliver(recommendations.PACKAGE)

    def open_scope(
        client: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> _RequestScope | None:
        call = _start(tracer, client, args, kwargs)
        return None if call is None else _RequestScope(call, client)

    inner = scoped_wrapper(open_scope, asynchronous=asynchronous)

    def wrapper(wrapped: Any, client: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if asynchronous:
            return _async(wrapped, client, args, kwargs)
        result = inner(wrapped, client, args, kwargs)
        for _ in range(_reasks(args, kwargs, result)):
            reask = _ReAsk(client, args, kwargs, result)
            if reask.request is None:
                break
            try:
                second = inner(wrapped, client, *reask.request)
            except Exception as exc:  # the answer the caller got stands
                get_guard().telemetry.internal_error("anthropic.reask", exc)
                break
            result = reask.joined(second)
        return result

    async def _async(wrapped: Any, client: Any, args: Any, kwargs: Any) -> Any:
        result = await inner(wrapped, client, args, kwargs)
        for _ in range(_reasks(args, kwargs, result)):
            reask = _ReAsk(client, args, kwargs, result)
            if reask.request is None:
                break
            try:
                second = await inner(wrapped, client, *reask.request)
            except Exception as exc:
                get_guard().telemetry.internal_error("anthropic.reask", exc)
                break
            result = reask.joined(second)
        return result

    return wrapper


def _reasks(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> int:
    """How many re-asks this call may make: none unless a message waits somewhere (the
    common case costs one test) and the call was a Messages request."""
    guard = get_guard()
    if not guard.deliveries.any_waiting():
        return 0
    try:
        if messages_request(args, kwargs) is None:
            return 0
        return reasks_allowed(guard)
    except Exception as exc:
        guard.telemetry.internal_error("anthropic.reask", exc)
        return 0


class _ReAsk:
    """The follow-up of one answer, if its report queued a re-ask (a truncation's
    continuation, a premature end's re-prompt): the request, and how to join its answer."""

    __slots__ = ("_first", "detector", "request")

    def __init__(self, client: Any, args: Any, kwargs: Any, result: Any) -> None:
        self._first = result
        self.detector: str | None = None

        def again(call: RequestCall, detector: str) -> Any:
            self.detector = detector
            return recommendations.again(call, detector)

        self.request = reask_request(
            get_guard(),
            RequestCall(client, args, kwargs, result=result),
            again,
            recommendations.PACKAGE,
        )

    def joined(self, second: Any) -> Any:
        """A truncated answer joined with its continuation; a re-prompt's answer replaces
        the empty one."""
        if self.detector != "truncation":
            return second
        try:
            return recommendations.join(self._first, second)
        except Exception as exc:
            get_guard().telemetry.internal_error("anthropic.join", exc)
            return second


def sdk_span_wrapper(wrapped: Callable[..., Any], instance: Any, args: Any, kwargs: Any) -> Any:
    """``start_api_call_span``: remember the SDK's span of the request we are watching."""
    span = wrapped(*args, **kwargs)
    call = IN_FLIGHT.get()
    if call is not None:
        try:
            call.sdk_span_started(span)
        except Exception as exc:
            get_guard().telemetry.internal_error("anthropic.sdk_span", exc)
    return span
