"""wrapt wrappers around ``litellm.completion`` / ``acompletion`` and ``litellm.responses``
/ ``aresponses``.

Each call:

1. runs the pre-flight check BEFORE LiteLLM builds and sends the request, so in enforce
   mode a stopped run, an exceeded token or cost budget, ``max_steps`` or a timeout raise
   ``LoopGuardInterrupt`` and no request leaves the process;
2. makes a ``chat {model}`` CLIENT span per the GenAI semantic conventions, with the
   provider LiteLLM resolves the model to (``openai/gpt-4o`` -> ``openai``); no message
   content and no tool arguments are put on it;
3. reports the answer (usage, finish reasons, the tool calls the model asked for) to the
   guard, which feeds the detectors and puts any decision on the span before it ends; a
   streamed answer is reported when its last chunk has been read;
4. in enforce mode, delivers a replan's recommendation waiting for the run into this call,
   once, as a user message at the end of ``messages`` (or ``input``); see
   :mod:`otel_loopguard_litellm.recommendations`, which also re-asks a truncated or empty
   non-streamed ``completion`` the caller's loop would end its turn on.

One call, one turn:

- The same function is wrapped in several modules (see the package docstring), Python's
  ``main.acompletion`` runs ``main.completion`` in an executor thread (with a copy of
  the context), and ``Router`` / ``litellm.LiteLLM().chat.completions.create`` call them
  too: a context variable set for the duration of the outer call makes the inner ones
  plain pass-throughs.
- Below us, our OpenAI package may see the same request: LiteLLM 1.110 sends
  ``openai/...`` requests with the OpenAI SDK's low-level ``client.post`` (that package
  never sees them) but ``azure/...`` ones through ``chat.completions.create``. Our span is
  current during the call, and the OpenAI package takes a current ``chat`` span of this
  instrumentation scope (or one naming ``openai``) for the request's span: it only runs its
  pre-flight check. Any other layer below that reports the turn itself (a provider SDK
  with its own GenAI spans, plugged in as a LiteLLM custom provider, say) reports inside
  ``guard.model_turn()``, opened around the call and, for a stream, around each chunk
  read: when it did, this span is marked managed and the turn is not reported again.

Nothing here may break the caller: internal errors are caught, counted by the guard
(``loopguard.internal_errors``) and logged; only ``LoopGuardInterrupt`` (enforce mode) and
LiteLLM's own exceptions reach the caller.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any

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
from otel_loopguard.kit.scoped_call import PlainScope, Wrapper, scoped_wrapper
from otel_loopguard.kit.streamed_answer import DoneCallback
from otel_loopguard_litellm.recommendations import PACKAGE
from otel_loopguard_litellm.streams import ObservedStream

# True while a completion / acompletion call we instrument runs (also in the executor
# thread acompletion hands the call to: it copies the context)
_IN_CALL: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "otel_loopguard_litellm_call", default=False
)


def in_call() -> bool:
    """Inside a call we instrument (a nested one passes through)."""
    return _IN_CALL.get()


# LiteLLM's provider names that differ from the GenAI conventions' gen_ai.provider.name
_PROVIDER_NAMES = {
    "azure": "azure.ai.openai",
    "azure_ai": "azure.ai.inference",
    "bedrock": "aws.bedrock",
    "vertex_ai": "gcp.vertex_ai",
    "vertex_ai_beta": "gcp.vertex_ai",
    "gemini": "gcp.gemini",
    "mistral": "mistral_ai",
    "xai": "x_ai",
    "watsonx": "ibm.watsonx.ai",
}


def _requested_model(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    model = kwargs.get("model", args[0] if args else None)
    return model if isinstance(model, str) else None


def _resolve(model: str | None, kwargs: dict[str, Any]) -> tuple[str | None, str]:
    """(model name without LiteLLM's provider prefix, gen_ai.provider.name)."""
    if model is None:
        return None, "litellm"
    try:
        import litellm

        resolved, provider, _, _ = litellm.get_llm_provider(
            model=model,
            custom_llm_provider=kwargs.get("custom_llm_provider"),
            api_base=kwargs.get("api_base") or kwargs.get("base_url"),
        )
    except Exception:  # a model LiteLLM does not know: the call itself will say so
        return model, "litellm"
    name = provider if isinstance(provider, str) and provider else "litellm"
    return resolved or model, _PROVIDER_NAMES.get(name, name)


class ModelCall:
    """One instrumented call: its span, the model-turn scope it runs in, its API shape.

    ``with call:`` around the wrapped function: our span is current, calls nested in it
    pass through (``_IN_CALL``), and a call that raises ends its span with the error.
    """

    __slots__ = ("_in_span", "_token", "model", "shape", "span", "turn")

    def __init__(
        self,
        span: Span,
        model: str | None,
        turn: Any,
        shape: ApiShape,
        on_error: Callable[[ModelCall, BaseException], None],
    ) -> None:
        self.span = span
        self.model = model
        self.turn = turn
        self.shape = shape
        self._in_span = call_span.InCallSpan(span, lambda error: on_error(self, error))
        self._token: Any = None

    def __enter__(self) -> None:
        self._token = _IN_CALL.set(True)
        self._in_span.__enter__()

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        try:
            self._in_span.__exit__(exc_type, exc, tb)
        finally:
            _IN_CALL.reset(self._token)


class ModelCallRecorder:
    """The span and guard side of a LiteLLM call."""

    def __init__(self, tracer: Tracer, guard_provider: Callable[[], Any]) -> None:
        self._tracer = tracer
        self._guard_provider = guard_provider

    def start(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], shape: ApiShape
    ) -> ModelCall | None:
        """Pre-flight, then the span; ``None`` when the call goes on uninstrumented.

        Raises only ``LoopGuardInterrupt``; an internal error is counted and logged.
        """
        try:
            return self._start(args, kwargs, shape)
        except LoopGuardInterrupt:
            raise
        except Exception as exc:
            self.internal_error("litellm.start", exc)
            return None

    def _start(self, args: tuple[Any, ...], kwargs: dict[str, Any], shape: ApiShape) -> ModelCall:
        guard = self._guard_provider()
        expected_tokens = output_token_cap(kwargs)
        model, provider = _resolve(_requested_model(args, kwargs), kwargs)
        attributes = chat_span_attributes(provider, model, kwargs, expected_tokens)
        span = self._tracer.start_span(
            chat_span_name(model), kind=SpanKind.CLIENT, attributes=attributes
        )
        call_span.preflight_in_span(guard, span, expected_tokens)
        return ModelCall(span, model, guard.model_turn(), shape, self.fail)

    def internal_error(self, where: str, exc: Exception) -> None:
        call_span.count_internal_error(self._guard_provider, where, exc)

    def deliver(
        self, deliver: Deliver, args: tuple[Any, ...], kwargs: dict[str, Any], span: Span
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The arguments the call is made with: the caller's, or new ones carrying the
        recommendation waiting for the run (recorded on ``span``, the call's). Called after
        the pre-flight check; never raises."""
        try:
            guard = self._guard_provider()
            return delivered_arguments(guard, deliver, PACKAGE, args, kwargs, span=span)
        except Exception as exc:
            self.internal_error("litellm.deliver", exc)
            return args, kwargs

    def call_returned(self, call: ModelCall) -> bool:
        """Close the call's model-turn scope; True when a layer below reported the turn."""
        try:
            call.turn.end()
            return bool(call.turn.reported)
        except Exception as exc:
            self.internal_error("litellm.turn", exc)
            return False

    def fail(self, call: ModelCall, error: BaseException) -> None:
        if self.call_returned(call):
            # a layer below counted this failed call (LiteLLM's own OpenTelemetry callback
            # ends its failure span inside the call): the processor must not count ours too
            try:
                self._guard_provider().mark_managed(call.span)
            except Exception as exc:
                self.internal_error("litellm.fail", exc)
        call_span.end_failed(call.span, error)

    def returned(self, call: ModelCall, kwargs: dict[str, Any], result: Any) -> Any:
        """What the caller gets: a stream to be judged at its end, or the answer, judged."""
        if _is_stream(kwargs, result):
            return self.stream(call, result)
        self.finish_result(call, result)
        return result

    def finish_result(self, call: ModelCall, result: Any) -> None:
        """``finish`` for a non-streamed answer; a shape we cannot read is an internal error."""
        reported_below = self.call_returned(call)
        try:
            answer = call.shape.read(result)
        except Exception as exc:
            self.internal_error("litellm.parse", exc)
            call.span.end()
            return
        self.finish(call, answer, reported_below)

    def finish(self, call: ModelCall, answer: ModelAnswer, reported_below: bool = False) -> None:
        """Record the answer on the span, tell the guard, end the span; may raise STOP."""
        span = call.span
        try:
            call_span.set_answer_attributes(span, answer)
            guard = self._guard_provider()
            if reported_below:
                guard.mark_managed(span)  # the layer below fed this turn already
                return
            call_span.report_answer(guard, span, answer, call.model)
        except LoopGuardInterrupt:
            raise
        except Exception as exc:
            self.internal_error("litellm.finish", exc)
        finally:
            span.end()

    def stream(self, call: ModelCall, stream: Any) -> Any:
        """The stream the caller gets: judged at its end, its span ended once."""
        reported_at_call = self.call_returned(call)
        try:
            open_turn = self._guard_provider().model_turn
            on_done = self._stream_callback(call, reported_at_call)
            return ObservedStream(stream, call.shape.folder(), on_done, open_turn)
        except Exception as exc:
            self.internal_error("litellm.stream", exc)
            call.span.end()
            return stream

    def _stream_callback(self, call: ModelCall, reported_at_call: bool) -> DoneCallback:
        def on_done(
            answer: ModelAnswer | None, error: BaseException | None, complete: bool, reported: bool
        ) -> None:
            if error is not None:
                self.fail(call, error)
            elif complete and answer is not None:
                self.finish(call, answer, reported_at_call or reported)
            else:  # the caller stopped reading
                call_span.end_unfinished(call.span, answer)

        return on_done


def _is_stream(kwargs: dict[str, Any], result: Any) -> bool:
    return kwargs.get("stream") is True and (
        hasattr(result, "__next__") or hasattr(result, "__anext__")
    )


class _CallScope(PlainScope):
    """One call of the wrapped function (a :class:`~otel_loopguard.kit.scoped_call.Scope`):
    ``with`` the :class:`ModelCall`, a waiting recommendation delivered into its request,
    then the answer (or the stream that brings it) judged."""

    __slots__ = ("_call", "_deliver", "_kwargs", "_recorder")

    def __init__(
        self,
        recorder: ModelCallRecorder,
        call: ModelCall,
        kwargs: dict[str, Any],
        deliver: Deliver,
    ) -> None:
        self._recorder = recorder
        self._call = call
        self._kwargs = kwargs
        self._deliver = deliver

    def __enter__(self) -> None:
        self._call.__enter__()

    def request(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return self._recorder.deliver(self._deliver, args, kwargs, self._call.span)

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        self._call.__exit__(exc_type, exc, tb)

    def after(self, result: Any) -> Any:
        return self._recorder.returned(self._call, self._kwargs, result)


def call_wrapper(
    recorder: ModelCallRecorder,
    shape: ApiShape,
    *,
    asynchronous: bool,
    deliver: Deliver,
    again: Again | None = None,
    join: Join | None = None,
) -> Wrapper:
    """The wrapper of one LiteLLM function, sync or async (``acompletion``...). ``deliver``
    adds a waiting recommendation to the call's request; ``again`` / ``join``
    (``completion``) ask again after a truncated or empty answer the caller would end its
    turn on (the kit's :func:`~otel_loopguard.kit.model_turn.reasking_wrapper`; not in a
    call nested in one we see, whose outer wrapper asks again)."""
    can_deliver(PACKAGE)

    def open_scope(
        instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> _CallScope | None:
        if _IN_CALL.get():
            return None  # nested in a call we see
        if not asynchronous and (
            kwargs.get("acompletion") is True or kwargs.get("aresponses") is True
        ):
            # completion(acompletion=True) (or responses' equivalent): it hands the call to
            # the async function, instrumented itself, and returns its coroutine
            return None
        call = recorder.start(args, kwargs, shape)
        return None if call is None else _CallScope(recorder, call, kwargs, deliver)

    wrapper = scoped_wrapper(open_scope, asynchronous=asynchronous)
    if again is None:
        return wrapper
    return reasking_wrapper(wrapper, again, join, PACKAGE, asynchronous, nested=in_call)
