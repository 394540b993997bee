"""Delivering a replan's recommendation into the model request of the run's next step.

Why two hook points: the model turn is one ``ModelRequestNode`` (:mod:`.model_turns`), where
the pre-flight check runs and the kit takes the run's waiting message (``deliver``); but the
messages the model receives are only built inside the node, after the capabilities'
``before_model_request`` hooks, in the ``ModelRequestContext`` the node hands to
``_agent_graph.model_request`` / ``model_request_stream`` (the innermost helpers that call
``Model.request`` / ``Model.request_stream``, once per attempt: retries and a
``FallbackModel``'s other models included). So ``deliver`` only puts the text in this step's
carrier (a context variable the node's wrapper opens and closes around the step) and the
wrappers of the two helpers add it to the request they send.

How it goes in: ``request_context.messages`` is, in pydantic-ai's own words, "an independently
owned shallow list" whose top-level assignments "change only the current request". We assign
a new list: the trailing ``ModelRequest`` replaced by a copy whose parts end with a
``UserPromptPart`` holding our text (after its ``ToolReturnPart``s, so each provider's
serialiser puts it after the tool results, in the same user turn where the provider wants
that); a new ``ModelRequest`` when the list ends in a ``ModelResponse``. The run's message
history and its message objects are never touched: the message reaches the model once and
is not part of the conversation pydantic-ai keeps (``result.all_messages()``).

Not delivered (``deliver`` says False, so the message counts as ``not_delivered``): a step
that resumes a provider-paused answer (the request is the paused response itself, continued;
nothing can follow it). A step that sends no request (a ``wrap_model_request`` hook answered
from a cache, an output submitted before the step) takes the message and never sends it.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar, Token
from dataclasses import replace
from typing import Any

from otel_loopguard import get_guard
from otel_loopguard.kit.model_turn import ModelCall

_PACKAGE = "pydantic_ai"


class _Carrier:
    """The recommendation this model-request step carries (None: nothing)."""

    __slots__ = ("part",)

    def __init__(self) -> None:
        #: the ``UserPromptPart`` each request of the step ends with (one object, so a
        #: second attempt over the same messages does not add it twice)
        self.part: Any = None


_STEP: ContextVar[_Carrier | None] = ContextVar("otel_loopguard_pydantic_ai_step", default=None)


def open_step() -> Token[_Carrier | None]:
    """A new carrier for the model-request step about to run (the node's wrapper)."""
    return _STEP.set(_Carrier())


def close_step(token: Token[_Carrier | None]) -> None:
    """The step is over: its carrier goes (a stream closed in another context: left as is,
    the carrier is empty or spent and the next step opens its own)."""
    try:
        _STEP.reset(token)
    except ValueError:
        _STEP.set(None)


def deliver(call: ModelCall, message: str) -> bool:
    """The kit's ``deliver`` for a ``ModelRequestNode``: the step's requests will end with
    ``message`` (see the module docstring). False when the step has no request to add to."""
    carrier = _STEP.get()
    if carrier is None:
        return False  # not inside our node wrapper: nothing would carry it
    if getattr(call.instance, "_resume_suspended", None) is not None:
        return False  # continues a paused answer: no new request
    from pydantic_ai.messages import UserPromptPart

    carrier.part = UserPromptPart(message)
    return True


def with_recommendation(messages: list[Any], part: Any) -> list[Any] | None:
    """A copy of ``messages`` ending with ``part`` in a user request (None: it already does,
    or nothing can follow the last message)."""
    from pydantic_ai.messages import ModelRequest, ModelResponse

    if not messages:
        return None
    last = messages[-1]
    if isinstance(last, ModelRequest):
        if any(existing is part for existing in last.parts):
            return None  # another attempt of the same step, over the messages we built
        return [*messages[:-1], replace(last, parts=[*last.parts, part])]
    if isinstance(last, ModelResponse) and getattr(last, "state", "complete") == "complete":
        return [*messages, ModelRequest(parts=[part])]
    return None  # a suspended response is continued as it is


def _carry(kwargs: dict[str, Any]) -> None:
    """Put the step's recommendation into the request this helper is about to send."""
    carrier = _STEP.get()
    if carrier is None or carrier.part is None:
        return
    try:
        request_context = kwargs["request_context"]
        messages = with_recommendation(list(request_context.messages), carrier.part)
        if messages is not None:
            request_context.messages = messages  # request-only: a new top-level list
    except Exception as exc:  # an unexpected request shape: the request goes as it was
        get_guard().telemetry.internal_error(f"{_PACKAGE}.deliver", exc)


def model_request_wrapper(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Wraps ``_agent_graph.model_request`` (a coroutine function) and
    ``model_request_stream`` (an async context manager): the request carries the step's
    recommendation. The cost with nothing to carry is one context-variable read."""
    _carry(kwargs)
    return wrapped(*args, **kwargs)
