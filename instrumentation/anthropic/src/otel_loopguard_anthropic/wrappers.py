"""The hook points: the client's ``request`` and the SDK's span start.

``messages.create`` (with or without ``stream=True``) and ``messages.stream`` all reach
``SyncAPIClient.request`` / ``AsyncAPIClient.request`` with a ``POST /v1/messages``
(``messages.stream`` does not go through ``create``), as do the beta Messages API and the
SDK's tool runner; wrapping ``request`` and keeping only that endpoint sees every model
call once, before anything is sent. ``start_api_call_span`` is where the SDK starts its own
span for the call, so we can tell the span processor not to feed that one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry.trace import Tracer

from otel_loopguard.guard import get_guard
from otel_loopguard_anthropic.calls import IN_FLIGHT, ModelCall
from otel_loopguard_anthropic.streams import AsyncObservedStream, ObservedStream
from otel_loopguard_anthropic.turns import turn_from_message

MESSAGES_PATH = "/v1/messages"


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


def sync_request_wrapper(tracer: Tracer) -> Callable[..., Any]:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: Any, kwargs: Any) -> Any:
        call = _start(tracer, instance, args, kwargs)
        if call is None:
            return wrapped(*args, **kwargs)
        token = IN_FLIGHT.set(call)
        try:
            with call.current():
                result = wrapped(*args, **kwargs)
        except BaseException as exc:
            call.fail(exc)
            call.release()
            raise
        finally:
            IN_FLIGHT.reset(token)
        return _settle(call, result)

    return wrapper


def async_request_wrapper(tracer: Tracer) -> Callable[..., Any]:
    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: Any, kwargs: Any) -> Any:
        call = _start(tracer, instance, args, kwargs)
        if call is None:
            return await wrapped(*args, **kwargs)
        token = IN_FLIGHT.set(call)
        try:
            with call.current():
                result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            call.fail(exc)
            call.release()
            raise
        finally:
            IN_FLIGHT.reset(token)
        return _settle(call, result)

    return wrapper


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
