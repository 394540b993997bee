"""The model side of each turn, for budgets, max steps, truncation and premature ends.

Why this hook point (pydantic-ai 2.68): every model request of an agent run is one
``ModelRequestNode`` of the agent graph. A run that is not streamed (``run``, ``run_sync``,
``iter`` driven with ``next``) calls ``ModelRequestNode.run(ctx)``; a streamed one
(``run_stream``, ``run_stream_events``, ``iter`` with ``node.stream``, and any run whose
capabilities observe events) enters ``ModelRequestNode.stream(ctx)`` first and later calls
``run``, which then only hands back the node's result. Inside either one the node asks the
model through the capability chain (``wrap_model_request``, retries, fallbacks, continuations
of a suspended response) and commits one ``ModelResponse`` to the run's message history: the
turn pydantic-ai itself counts in ``usage.requests``. Wrapping these two methods sees every
turn whatever the ``Model`` subclass (a provider's, ``FallbackModel``, ``TestModel``,
``FunctionModel``, a user's own); wrapping model classes would miss the others, and wrapping
``Model.request`` would count a fallback's rejected attempts as turns.

- Before the request: the pre-flight check (``LoopGuard.preflight_llm``: a stopped run,
  ``max_steps`` reached, the run's ``timeout`` passed, no token headroom left), so in
  ``enforce`` mode a vetoed request is never sent; then open a ``LoopGuard.model_turn``.
- After it (for a stream: when its context is left, the response complete): one
  ``llm_response`` with the response's usage (``usage.input_tokens`` / ``output_tokens``,
  plus the failed attempts a fallback billed), pydantic-ai's normalised finish reason
  (``length`` is a truncation), the tool calls it asks for and whether it is empty (no text,
  no file, no tool call); unless a model-call instrumentation below already reported the
  turn (our OpenAI or Anthropic package under pydantic-ai's provider models, or another
  GenAI span of the provider SDK that ends inside the request), which marks the open turn.
  In ``enforce`` mode a STOP (a token budget, max steps) raises from the node, before the
  tools it asked for run.
- A stream left early (the consumer broke out, an error, a cancellation): the response
  pydantic-ai committed for it, if any, is still reported, but never raises: the run is
  already ending by the caller's exception.

The turn of a stream stays open while the caller holds it, because a layer below may report
the turn only when the stream is read to its end or closed. Another agent run started
inside that window (in the body of ``async with agent.run_stream(...)``) and a tool that
``run_stream`` runs on the final answer under ``end_strategy="exhaustive"`` each start with
no turn open (the core's ``agent_run`` and ``tool_call`` do that), so their model calls do
not pass for this turn's report. A bare model call the caller makes in that body, outside
any run or tool, still would.

With pydantic-ai's own instrumentation on (``Agent(instrument=True)``,
``Agent.instrument_all()``, an ``InstrumentedModel``) there is no run of ours: its ``chat``
spans feed the turns through the span processor, and this wrapper only runs the pre-flight
check against the run its ``invoke_agent`` span stands for. A model request outside any run
and any trace is left alone.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from opentelemetry import trace

from otel_loopguard import current_run
from otel_loopguard.kit.model_turn import ModelCall, model_turn_scope, model_turn_wrapper
from otel_loopguard_pydantic_ai.recommendations import close_step, deliver, open_step

_PACKAGE = "pydantic_ai"
#: how our errors are counted (``loopguard.internal_errors``) and logged
_WHERE = f"{_PACKAGE}.model_turn"

# response parts that neither say nor ask for anything
_SILENT_PARTS = frozenset({"thinking", "compaction"})
# response parts that say something when their ``content`` is not blank
_TEXT_PARTS = frozenset({"text", "speech"})
# tools the provider runs itself: asked for, but not calls we can name with arguments
_NATIVE_TOOL_PARTS = frozenset({"builtin-tool-call", "builtin-tool-return"})


def _applies(node: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    # streamed before (``run`` returns the stream's result), or no run to report to
    return not _already_requested(node) and _observed()


def _before(call: ModelCall) -> Any:
    return _last_message(call.args, call.kwargs)


def _read(call: ModelCall) -> dict[str, Any] | None:
    """The step's response as ``observe_llm_response`` arguments (``None``: the request
    failed before anything was committed)."""
    response = _step_response(call.instance, _graph_context(call.args, call.kwargs), call.before)
    return _read_response(response) if response is not None else None


#: the model turn of ``ModelRequestNode.run(ctx)``; a recommendation waiting for the run
#: goes into the step's requests (:mod:`.recommendations`)
_turn_wrapper = model_turn_wrapper(
    _read,
    package=_PACKAGE,
    applies=_applies,
    before=_before,
    report_failed=True,
    asynchronous=True,
    deliver=deliver,
)


async def request_wrapper(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Wrap ``ModelRequestNode.run(ctx)``: the model turn, inside the step's carrier of a
    delivered recommendation (closed when the step is over, so a later step never sends it)."""
    token = open_step()
    try:
        return await _turn_wrapper(wrapped, instance, args, kwargs)
    finally:
        close_step(token)


def stream_wrapper(
    wrapped: Callable[..., AbstractAsyncContextManager[Any]],
    instance: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> AbstractAsyncContextManager[Any]:
    """Wrap ``ModelRequestNode.stream(ctx)``, an async context manager yielding the stream."""
    if not _applies(instance, args, kwargs):
        # a node streams once (pydantic-ai refuses a second time): its turn is counted
        return wrapped(*args, **kwargs)
    return _streamed_turn(wrapped, instance, args, kwargs)


@asynccontextmanager
async def _streamed_turn(
    wrapped: Callable[..., AbstractAsyncContextManager[Any]],
    instance: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> AsyncIterator[Any]:
    """The model turn is open while the caller holds the stream: pydantic-ai reads the rest
    of the response, closes the stream and commits the response when the context is left.
    The pre-flight check comes before the request is opened: a vetoed one is never sent."""
    token = open_step()
    try:
        scope = model_turn_scope(
            _read,
            ModelCall(instance, args, kwargs),
            package=_PACKAGE,
            before=_before,
            report_failed=True,
            deliver=deliver,
        )
        with scope:
            async with wrapped(*args, **kwargs) as agent_stream:
                yield agent_stream
        scope.after(None)
    finally:
        close_step(token)


def _observed() -> bool:
    """In one of our runs, or in a trace whose run the span processor knows (pydantic-ai's
    own ``invoke_agent`` span): else there is nothing to check or to report to."""
    if current_run() is not None:
        return True
    return trace.get_current_span().get_span_context().is_valid


def _already_requested(node: Any) -> bool:
    """The node was streamed (``run`` then returns its result, or raises)."""
    return getattr(node, "_result", None) is not None or getattr(node, "_did_stream", False) is True


def _graph_context(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return args[0] if args else kwargs.get("ctx")


def _last_message(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The run's last message before the request, to tell the response it adds."""
    try:
        history = _graph_context(args, kwargs).state.message_history
        return history[-1] if history else None
    except Exception:  # a context shape we do not know: the node's result still tells
        return None


def _step_response(node: Any, ctx: Any, before: Any) -> Any:
    """The ``ModelResponse`` this step committed: the one the next ``CallToolsNode`` acts
    on, else (a hook sent the step back to the model, a stream stopped partway) the
    response the step appended to the run's message history."""
    response = getattr(getattr(node, "_result", None), "model_response", None)
    if response is not None:
        return response
    history = ctx.state.message_history
    last = history[-1] if history else None
    if last is not before and getattr(last, "kind", None) == "response":
        return last
    return None


def _read_response(response: Any) -> dict[str, Any]:
    """The ``observe_llm_response`` arguments for one ``ModelResponse``.

    ``requested_tool_calls`` is ``None`` (unknown) when the model also used a tool its
    provider runs (web search, code execution): the detectors then do not read the turn
    as "no tool call".
    """
    said = False
    native_calls = False
    requested: list[tuple[str, Any]] = []
    for part in response.parts:
        kind = getattr(part, "part_kind", None)
        if kind == "tool-call":
            requested.append((str(part.tool_name), _arguments(part)))
        elif kind in _TEXT_PARTS:
            content = getattr(part, "content", None)
            said = said or (isinstance(content, str) and bool(content.strip()))
        elif kind in _NATIVE_TOOL_PARTS:
            native_calls = True
        elif kind not in _SILENT_PARTS:  # a file, or a part kind newer than this module
            said = True
    usage = response.usage
    input_tokens, output_tokens = _tokens(usage)
    for attempt in getattr(response, "failed_attempts", None) or ():
        # a fallback's rejected attempts: billed, and not in the response's own usage
        attempt_input, attempt_output = _tokens(getattr(attempt, "usage", None))
        input_tokens = _add(input_tokens, attempt_input)
        output_tokens = _add(output_tokens, attempt_output)
    model = getattr(response, "model_name", None) or getattr(response, "model_id", None)
    finish_reason = getattr(response, "finish_reason", None)
    return {
        "model": model if isinstance(model, str) else None,
        "finish_reason": finish_reason if isinstance(finish_reason, str) else None,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "empty": not said and not requested and not native_calls,
        "requested_tool_calls": None if native_calls else requested,
    }


def _arguments(part: Any) -> Any:
    """A tool call's arguments as a dict; the raw text when they are not valid JSON."""
    try:
        return part.args_as_dict(raise_if_invalid=True)
    except Exception:
        return part.args


def _tokens(usage: Any) -> tuple[int | None, int | None]:
    """Input and output tokens of a ``RequestUsage``; unknown when the provider sent none."""
    if usage is None or getattr(usage, "unmeasured_requests", 0):
        return None, None
    return _count(getattr(usage, "input_tokens", None)), _count(
        getattr(usage, "output_tokens", None)
    )


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _add(total: int | None, more: int | None) -> int | None:
    if more is None:
        return total
    return more if total is None else total + more
