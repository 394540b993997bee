"""The model side of a smolagents step, for budgets, max steps, repeated tool steps, and
the recommendations a replan sends the model.

smolagents calls ``self.model.generate`` (or ``generate_stream``) once per step, on
whichever ``Model`` subclass the user chose (OpenAI, LiteLLM, Hugging Face, local), each
overriding ``generate``; the one place common to all of them is the agent's
``_step_stream`` generator (``ToolCallingAgent`` and ``CodeAgent`` each define one).

- Before the step: the pre-flight check (stopped run, max steps, timeout, token or cost
  budget) so in enforce mode a run over budget makes no further model call.
- The step's request: ``_step_stream`` builds the messages the model receives with
  ``write_memory_to_messages()`` (a new list, rebuilt from memory every step) right before
  it calls the model. In enforce mode, a replan's recommendation waiting for the run is
  appended to that list as a user ``ChatMessage`` (see :func:`memory_messages_wrapper`).
- After the step: one ``llm_response`` with the step's token usage, its finish reason (from
  the provider's answer in ``ChatMessage.raw``) and the tool calls it asked for
  (``CodeAgent``: its ``python_interpreter`` code), unless a model-call instrumentation
  (our OpenAI SDK package, for ``OpenAIServerModel``) already reported this turn, which
  marks the ``LoopGuard.model_turn`` open around the step (the step's tools start with no
  turn open, so a managed agent's turns stay its own). The report comes after the step's
  tool calls, because smolagents records the step only then; budgets and repeated steps do
  not mind. A step that failed after the model answered (an empty answer smolagents cannot
  parse, code that does not run) is reported too, without raising: smolagents records the
  error and goes on to the next step, which a STOP then vetoes; that is how an empty
  give-up after failing tools (``premature_end``) is seen at all.

No re-ask (``again``): smolagents never ends a run on a truncated or empty answer. It fails
that step (a parsing or execution error in memory) and asks the model again in the next
step, whose messages carry the continuation prompt or re-prompt; a run ends only with
``final_answer`` or ``max_steps``.
"""

from __future__ import annotations

import contextvars
import enum
from collections.abc import Generator
from typing import Any

from otel_loopguard import LoopGuardInterrupt, get_guard
from otel_loopguard.kit.model_turn import ModelCall
from otel_loopguard.kit.recommendations import can_deliver, deliver_waiting

_PACKAGE = "smolagents"

#: the agent whose step is about to build its request: its next
#: ``write_memory_to_messages()`` (the step's own, before the model call) carries a
#: waiting recommendation. Reset once taken, so a later call (a planning step, a user's
#: own) is left alone.
_REQUEST_OF: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "otel_loopguard_smolagents_request_of", default=None
)


def _requested(step: Any) -> list[tuple[str, Any]]:
    """The tool calls the step's answer asked for: the step's own record, or (a step whose
    tool failed: smolagents records the calls only when all of them succeeded) the answer's
    ``tool_calls``."""
    calls = getattr(step, "tool_calls", None)
    if calls:
        return [(str(getattr(c, "name", "")), getattr(c, "arguments", None)) for c in calls]
    message = getattr(step, "model_output_message", None)
    return [
        (str(getattr(c.function, "name", "")), getattr(c.function, "arguments", None))
        for c in getattr(message, "tool_calls", None) or ()
        if getattr(c, "function", None) is not None
    ]


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def _finish_reason(message: Any) -> str | None:
    """The provider's finish reason in ``ChatMessage.raw``: the OpenAI shape (OpenAI,
    LiteLLM, Hugging Face inference: ``choices[0].finish_reason``) or Bedrock's
    ``stopReason``; None for a streamed answer (smolagents keeps no ``raw`` then) or a local
    model."""
    raw = getattr(message, "raw", None)
    if raw is None:
        return None
    choices = _field(raw, "choices")
    reasons = [_field(choices[0], "finish_reason")] if isinstance(choices, list | tuple) else []
    reasons += [_field(raw, "stopReason"), _field(raw, "stop_reason")]
    for reason in reasons:
        if isinstance(reason, enum.Enum):
            reason = reason.value
        if isinstance(reason, str) and reason:
            return reason
    return None


def _report_step(guard: Any, agent: Any, step: Any, *, raise_on_stop: bool = True) -> None:
    usage = getattr(step, "token_usage", None)
    message = getattr(step, "model_output_message", None)
    requested = _requested(step)
    guard.observe_llm_response(
        model=getattr(getattr(agent, "model", None), "model_id", None),
        finish_reason=_finish_reason(message),
        input_tokens=getattr(usage, "input_tokens", None),
        output_tokens=getattr(usage, "output_tokens", None),
        empty=not requested and not _has_text(getattr(message, "content", None)),
        requested_tool_calls=requested,
        raise_on_stop=raise_on_stop,
    )


def _has_text(content: Any) -> bool:
    """A message content with something in it: text, or a list of parts with text."""
    if isinstance(content, str):
        return bool(content.strip())
    if isinstance(content, list):
        return any(_has_text(_field(part, "text")) for part in content)
    return False


def step_stream_wrapper(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Wrap ``ToolCallingAgent._step_stream`` / ``CodeAgent._step_stream``."""
    return _observed_step(wrapped, instance, args, kwargs)


def _observed_step(
    wrapped: Any, agent: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Generator[Any, None, None]:
    guard = get_guard()
    guard.preflight_llm()
    step = args[0] if args else kwargs.get("memory_step")
    # the step's tools run inside it too: the tool gate starts them with no turn open, so
    # a managed agent called as a tool reports its own turns, not this one
    with guard.model_turn() as turn:  # never raises
        _REQUEST_OF.set(agent)  # set, not reset: a stream may be resumed in another context
        try:
            yield from wrapped(*args, **kwargs)
        except Exception:
            # smolagents records the failed step and asks again: its answer still counts
            if turn.needs_report and getattr(step, "model_output_message", None) is not None:
                _report_failed_step(guard, agent, step)
            raise
        finally:
            if _REQUEST_OF.get() is agent:
                _REQUEST_OF.set(None)
    if turn.needs_report:  # no model-call instrumentation below reported it
        _report_step(guard, agent, step)  # raises only LoopGuardInterrupt (enforce, STOP)


def _report_failed_step(guard: Any, agent: Any, step: Any) -> None:
    """The report of a step that raised: never raises (the step's error goes on)."""
    try:
        _report_step(guard, agent, step, raise_on_stop=False)
    except LoopGuardInterrupt:  # pragma: no cover - raise_on_stop=False never raises it
        pass
    except Exception as exc:
        guard.telemetry.internal_error(f"{_PACKAGE}.model_turn", exc)


def memory_messages_wrapper(tracer: Any = None) -> Any:
    """Wrap ``MultiStepAgent.write_memory_to_messages``: the step's request carries the
    run's waiting recommendation (this package delivers, said once here)."""
    can_deliver(_PACKAGE)

    def wrapper(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        messages = wrapped(*args, **kwargs)
        if _REQUEST_OF.get() is not instance:  # not a step's request: the common case
            return messages
        _REQUEST_OF.set(None)
        if kwargs.get("summary_mode") or (args and args[0]):
            return messages  # a planning summary, not the step's request
        call = ModelCall(instance, (messages,), {})
        if deliver_waiting(get_guard(), call, _deliver, _PACKAGE) is None:
            return messages
        return call.args[0]

    return wrapper


def _deliver(call: ModelCall, message: str) -> bool:
    """A new list: the step's messages, then a user ``ChatMessage`` with ``message``.

    At the end, after the last step's observations (a ``tool-response`` message, which the
    model classes send as a user turn; ``get_clean_message_list`` merges two user turns in a
    row into one, so no provider sees two). smolagents rebuilds the list from memory every
    step, so the message is in this request only and never in the agent's memory."""
    from smolagents.models import ChatMessage, MessageRole

    (messages,) = call.args
    if not isinstance(messages, list):
        return False
    nudge = ChatMessage(role=MessageRole.USER, content=[{"type": "text", "text": message}])
    call.args = ([*messages, nudge],)
    return True
