"""Delivering a replan's recommendation into the run's next model call.

Why this hook point (openai-agents 0.24): both turn functions of
``agents.run_internal.run_loop`` (``get_new_response`` for ``Runner.run`` / ``run_sync``,
``run_single_turn_streamed`` for ``run_streamed``) build the model's input with
``maybe_filter_model_input`` (the runner's ``call_model_input_filter`` step), look it up in
``run_loop``'s module globals, and hand the ``ModelInputData`` it returns to the model call
(``Model.get_response`` / ``stream_response``, through the retry helpers, each attempt
reading the same object). The model call itself is a closure we cannot reach into. So the
turn's input is the one place where a message can be added for every ``Model`` subclass.

What goes in: an input item ``{"role": "user", "content": text}`` at the end of a copy of
the input list (a string input becomes a one-item user list first): after the
``function_call_output`` items that answer the previous response's calls, as the Responses
API and the SDK's Chat Completions converter both accept. A new ``ModelInputData`` is
returned; the runner's items, its session and a user's ``call_model_input_filter`` result
are never changed (the user's filter runs first and never sees our item). The runner's
server-conversation tracker marks what it sends by identity, so our item is sent once.

The delivery comes a moment before the pre-flight check of the model call
(:mod:`.model_turns`), not after it: a call that check vetoes has taken the message with
it, which only matters to a run that is being stopped anyway.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from otel_loopguard import get_guard
from otel_loopguard.kit.model_turn import ModelCall
from otel_loopguard.kit.recommendations import can_deliver, deliver_waiting

PACKAGE = "openai_agents"


def deliver(call: ModelCall, message: str) -> bool:
    """``call.kwargs["input"]`` with our user message at the end (a new list)."""
    items = call.kwargs["input"]
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    elif not isinstance(items, list):
        return False  # an input shape we do not know: leave it as it is
    call.kwargs = {**call.kwargs, "input": [*items, {"role": "user", "content": message}]}
    return True


def with_recommendation(model_input: Any) -> Any:
    """``model_input`` (a ``ModelInputData``), or a copy whose input carries the message
    waiting for the current run."""
    guard = get_guard()
    if not guard.deliveries.any_waiting():  # the common case: one test
        return model_input
    call = ModelCall(None, (), {"input": model_input.input})
    if deliver_waiting(guard, call, deliver, PACKAGE) is None:
        return model_input
    return replace(model_input, input=call.kwargs["input"])


def filter_wrapper(
    wrapped: Callable[..., Awaitable[Any]],
    instance: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Awaitable[Any]:
    """Wrap ``run_loop.maybe_filter_model_input``: the input it returns carries a waiting
    recommendation (see the module docstring)."""

    async def filtered() -> Any:
        model_input = await wrapped(*args, **kwargs)
        try:
            return with_recommendation(model_input)
        except Exception as exc:  # never break the run: the input goes as it was
            get_guard().telemetry.internal_error(f"{PACKAGE}.deliver", exc)
            return model_input

    return filtered()


def make_filter_wrapper(tracer: Any) -> Callable[..., Awaitable[Any]]:
    """The filter wrapper, built once per instrumentation: this process now delivers
    (replans are queued for the next model call instead of recorded as not delivered)."""
    can_deliver(PACKAGE)
    return filter_wrapper
