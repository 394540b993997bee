"""The model side of each turn, for budgets, max steps, truncation and premature ends.

Why these hook points (openai-agents 0.24): the runner never calls ``Model.get_response``
or ``Model.stream_response`` itself; both turn functions of ``agents.run_internal.run_loop``
(``run_single_turn`` through ``get_new_response``, and ``run_single_turn_streamed``) call
them inside ``get_response_with_retry`` / ``stream_response_with_retry`` and then hand the
resulting ``ModelResponse`` to ``get_single_step_result_from_response``, which runs the
tools and handoffs the model asked for. All three names are looked up in ``run_loop``'s
module globals, so wrapping them there sees every turn of ``Runner.run``, ``run_sync`` and
``run_streamed``, whichever ``Model`` subclass the agent uses (the SDK's OpenAI models,
LiteLLM, a user's own or a scripted one); wrapping a model class would miss the others.

- When a model call starts (``*_response_with_retry``): the pre-flight check
  (``LoopGuard.preflight_llm``: a stopped run, ``max_steps`` reached, the run's
  ``timeout`` passed, no token headroom left), so in ``enforce`` mode a vetoed call is never
  made and never paid for; then open a ``LoopGuard.model_turn``.
- Before the turn's tools run (``get_single_step_result_from_response``): one
  ``llm_response`` with the response's usage, its function-tool calls and whether it was
  empty, unless a model-call instrumentation below (our OpenAI SDK package, for the SDK's
  OpenAI models) already reported this turn, which marks the open turn. In ``enforce`` mode a
  STOP (a token budget, max steps) interrupts the run before the tools run.

``ModelResponse`` carries no finish reason. The SDK's own OpenAI models raise
``ModelBehaviorError`` for a response that stopped early (``status="incomplete"``); a model
that returns the cut-off answer instead marks its output message ``status="incomplete"``,
which we report as ``max_output_tokens``.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from typing import Any

from otel_loopguard import get_guard
from otel_loopguard.kit import ModelTurn
from otel_loopguard_openai_agents.tools import _decode_arguments

# the model turn opened when the current turn's model call was made (None: none open)
_TURN_AT_MODEL_CALL: contextvars.ContextVar[ModelTurn | None] = contextvars.ContextVar(
    "otel_loopguard_openai_agents_turn_at_model_call", default=None
)

# output items that neither say something nor ask for something
_SILENT_ITEMS = frozenset({"message", "reasoning"})

TRUNCATED = "max_output_tokens"


def model_call_wrapper(
    wrapped: Callable[..., Any],
    instance: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """Wrap ``get_response_with_retry`` / ``stream_response_with_retry`` in ``run_loop``.

    Called (not yet awaited or iterated) in the turn's own task, so the model turn opened
    here is open while the call runs and is visible to :func:`turn_wrapper` later in that
    turn, which ends it. Before it, the pre-flight check, which raises
    ``LoopGuardInterrupt`` (a ``BaseException``: it passes the runner's ``except
    Exception``) when ``enforce`` vetoes the call.
    """
    guard = get_guard()
    guard.preflight_llm()  # never raises anything but LoopGuardInterrupt
    previous = _TURN_AT_MODEL_CALL.get()
    if previous is not None:  # a call whose answer never came (it raised, say)
        previous.end()
    _TURN_AT_MODEL_CALL.set(guard.model_turn())  # never raises
    return wrapped(*args, **kwargs)


async def turn_wrapper(
    wrapped: Callable[..., Awaitable[Any]],
    instance: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """Wrap ``get_single_step_result_from_response(*, bindings, new_response, ...)``."""
    turn = _TURN_AT_MODEL_CALL.get()
    _TURN_AT_MODEL_CALL.set(None)
    if turn is not None:
        turn.end()
        if not turn.needs_report:  # outside a run, or a layer below reported the turn
            return await wrapped(*args, **kwargs)
    _observe_turn(kwargs)  # raises only LoopGuardInterrupt (enforce, STOP)
    return await wrapped(*args, **kwargs)


def _observe_turn(kwargs: dict[str, Any]) -> None:
    guard = get_guard()
    try:
        response = kwargs.get("new_response")
        if response is None:
            return
        turn = _read_turn(response)
        agent = getattr(kwargs.get("bindings"), "public_agent", None)
        agent_name = getattr(agent, "name", None)
        usage = getattr(response, "usage", None)
        report: dict[str, Any] = {
            "model": _model_name(kwargs),
            "finish_reason": TRUNCATED if turn.truncated else None,
            "input_tokens": _tokens(getattr(usage, "input_tokens", None)),
            "output_tokens": _tokens(getattr(usage, "output_tokens", None)),
            "empty": turn.empty,
            "requested_tool_calls": turn.requested,
            "agent_name": agent_name if isinstance(agent_name, str) else None,
        }
    except Exception as exc:  # never let our bookkeeping break the agent
        guard.telemetry.internal_error("openai_agents.model_turn", exc)
        return
    guard.observe_llm_response(**report)


class _Turn:
    __slots__ = ("empty", "requested", "truncated")

    def __init__(
        self, empty: bool, requested: list[tuple[str, Any]] | None, truncated: bool
    ) -> None:
        self.empty = empty
        self.requested = requested
        self.truncated = truncated


def _read_turn(response: Any) -> _Turn:
    """Text, function-tool calls and truncation of a ``ModelResponse``'s output items.

    ``requested`` is ``None`` (unknown) when the model also asked for a tool we cannot name
    with arguments (hosted tools, computer or shell actions): the detectors then do not
    read the turn as "no tool call".
    """
    said = False
    other_calls = False
    truncated = False
    requested: list[tuple[str, Any]] = []
    for item in getattr(response, "output", None) or ():
        kind = _field(item, "type")
        if kind == "message":
            said = said or _has_text(_field(item, "content"))
            truncated = truncated or _field(item, "status") == "incomplete"
        elif kind == "function_call":
            name = _field(item, "name")
            if isinstance(name, str):
                requested.append((name, _decode_arguments(_field(item, "arguments"))))
            else:
                other_calls = True
        elif kind not in _SILENT_ITEMS:
            other_calls = True
    return _Turn(
        empty=not said and not requested and not other_calls,
        requested=None if other_calls else requested,
        truncated=truncated,
    )


def _has_text(content: Any) -> bool:
    for part in content or ():
        for name in ("text", "refusal"):
            text = _field(part, name)
            if isinstance(text, str) and text.strip():
                return True
    return False


def _field(item: Any, name: str) -> Any:
    """An output item's field: the SDK's are pydantic models, a custom model may use dicts."""
    if isinstance(item, dict):
        return item.get(name)
    return getattr(item, name, None)


def _model_name(kwargs: dict[str, Any]) -> str | None:
    """The model the turn used: ``RunConfig.model`` overrides the agent's, as in the SDK."""
    model = getattr(kwargs.get("run_config"), "model", None)
    if model is None:
        model = getattr(getattr(kwargs.get("bindings"), "execution_agent", None), "model", None)
    if isinstance(model, str):
        return model or None
    name = getattr(model, "model", None)  # the SDK's model classes keep the name here
    return name if isinstance(name, str) and name else None


def _tokens(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
