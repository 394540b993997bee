"""The model side of each turn, for budgets, max steps, truncation and premature ends.

Why this hook point (langchain-core 1.x): every chat model answer is produced inside
``BaseChatModel._generate_with_cache`` (``_agenerate_with_cache`` for async), whatever
the provider class. ``invoke`` / ``ainvoke`` reach it through ``generate_prompt`` and
``generate`` / ``agenerate``, once per prompt of a batch; so does streaming that callers
do not ask for themselves (LangGraph's ``stream_mode="messages"`` and ``astream_events``
make ``invoke`` stream through ``_stream`` inside it). ``generate`` would see a batch as
one call; ``_generate`` is what each provider overrides, so it cannot be wrapped once.
When it returns, the answer's ``response_metadata`` (finish reason, model name) is filled
in. A direct ``model.stream()`` / ``astream()`` call (and a chain's ``stream``, which
reaches the model's) bypasses it: :mod:`otel_loopguard_langchain.model_streams` observes
those turns, with the same reader (:func:`read_message`). Both wrappers are the kit's
(:func:`~otel_loopguard.kit.model_turn.model_turn_wrapper`, for the plain and the async
method alike).

- Before the call: the pre-flight check (``LoopGuard.preflight_llm``: a stopped run,
  ``max_steps`` reached, the run's ``timeout`` passed, no token headroom left), so in
  ``enforce`` mode a vetoed call is never made; then open a ``LoopGuard.model_turn``.
- After it: one ``llm_response`` with the answer's usage (``usage_metadata``), the tool
  calls it asks for, its finish reason and whether it is empty (no text, no tool call),
  unless a model-call instrumentation below (our OpenAI SDK package, for ``ChatOpenAI``)
  already reported this turn, which marks the open turn. In ``enforce`` mode a STOP (a token
  budget, max steps) raises in the model node, before the tools it asked for run.

- Delivery (``enforce`` mode): a replan's recommendation waiting for the run (a read-only
  loop's nudge, a shell failure's hint, a truncation's continuation prompt, a premature
  end's re-prompt) is added to this call's messages as a ``HumanMessage`` at the end, in a
  copy of the list: the graph's state keeps the messages the agent wrote. A message list
  ends with the user's input or the tool results of the last turn, after which a user
  message is valid for every provider (langchain-anthropic merges it into the user turn
  that carries the tool results).
- Re-asks: a LangGraph ReAct agent ends its run on an answer without tool calls, so an
  answer cut off at the token limit, or an empty give-up after failing tools, would end
  it. Here the model is asked again at once (the answer so far plus the continuation
  prompt, or the re-prompt) and the caller gets one ``AIMessage``: the joined text with the
  usage summed (truncation) or the new answer (premature end).

Only inside a run the guard knows (a LangGraph run, or an application's own
``agent_run``): a model called outside any run is left alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from otel_loopguard import LoopGuardInterrupt
from otel_loopguard.kit.held_back import exception_flavour, interrupt_again
from otel_loopguard.kit.model_turn import ModelCall, in_a_run, model_turn_wrapper
from otel_loopguard_langchain.runs import current_agent

if TYPE_CHECKING:  # the framework is imported where it is used: the package imports without it
    from langchain_core.messages import BaseMessage, HumanMessage

# where providers put the finish reason in ``response_metadata``: OpenAI, Gemini and most
# others ``finish_reason``, Anthropic ``stop_reason``, Ollama ``done_reason``, Bedrock
# Converse ``stopReason``
_FINISH_REASON_KEYS = ("finish_reason", "stop_reason", "done_reason", "stopReason")
_MODEL_NAME_KEYS = ("model_name", "model")


def _read(call: ModelCall) -> dict[str, Any] | None:
    return _read_answer(call.instance, call.result)


def internal_message(text: str) -> HumanMessage:
    """Our recommendation as the model sees it: a user message the agent did not write."""
    from langchain_core.messages import HumanMessage

    return HumanMessage(content=text)


def _messages(call: ModelCall) -> list[BaseMessage] | None:
    """The message list of a ``_generate_with_cache(messages, stop, run_manager, **kwargs)``
    call (langchain passes it positionally; a caller may name it)."""
    messages = call.args[0] if call.args else call.kwargs.get("messages")
    return messages if isinstance(messages, list) else None


def _with_messages(call: ModelCall, messages: list[BaseMessage]) -> tuple[Any, dict[str, Any]]:
    """``call``'s arguments with ``messages`` in place of its message list."""
    if call.args:
        return (messages, *call.args[1:]), dict(call.kwargs)
    return call.args, {**call.kwargs, "messages": messages}


def _deliver(call: ModelCall, message: str) -> bool:
    """The recommendation at the end of a copy of the call's messages."""
    messages = _messages(call)
    if messages is None:
        return False
    call.args, call.kwargs = _with_messages(call, [*messages, internal_message(message)])
    return True


def _answer(result: Any) -> Any:
    """The first generation's message of a ``ChatResult`` (the answer ``invoke`` returns)."""
    generations = getattr(result, "generations", None)
    return getattr(generations[0], "message", None) if generations else None


def _again(call: ModelCall, detector: str) -> tuple[Any, dict[str, Any]] | None:
    """The re-ask after ``call.result``: the same request plus the answer so far as an
    ``AIMessage`` (text only: a truncated answer's cut tool arguments cannot be sent back
    without tool results). An empty answer adds nothing (providers reject an empty
    assistant turn); the re-prompt itself is delivered into the request by ``_deliver``.
    None when the answer asks for tools: the graph goes on to run them, and the waiting
    message goes into the next model call instead."""
    from langchain_core.messages import AIMessage

    messages = _messages(call)
    answer = _answer(call.result)
    if messages is None or not isinstance(answer, AIMessage) or answer.tool_calls:
        return None
    text = _text_of(answer.content)
    follow_up = [*messages, AIMessage(content=text)] if text else list(messages)
    return _with_messages(call, follow_up)


def _join(first: Any, second: Any) -> Any:
    """One ``ChatResult`` whose answer is the truncated text followed by its continuation,
    the usage of both calls summed, the rest (finish reason, tool calls) of the second."""
    from langchain_core.messages import AIMessage
    from langchain_core.messages.ai import add_usage
    from langchain_core.outputs import ChatGeneration, ChatResult

    head, tail = _answer(first), _answer(second)
    if not isinstance(head, AIMessage) or not isinstance(tail, AIMessage):
        return second
    usage = head.usage_metadata
    if usage and tail.usage_metadata:
        usage = add_usage(usage, tail.usage_metadata)
    message = tail.model_copy(
        update={
            "content": _joined_content(head.content, tail.content),
            "usage_metadata": usage or tail.usage_metadata,
            "id": head.id or tail.id,
        }
    )
    generation_info = getattr(second.generations[0], "generation_info", None)
    return ChatResult(
        generations=[
            ChatGeneration(message=message, generation_info=generation_info),
            *second.generations[1:],
        ],
        llm_output=second.llm_output,
    )


def _text_of(content: Any) -> str:
    """The text of a message's content: the string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    return "".join(
        block if isinstance(block, str) else str(block.get("text") or "")
        for block in content or ()
        if isinstance(block, str) or (isinstance(block, Mapping) and block.get("type") == "text")
    )


def _joined_content(head: Any, tail: Any) -> Any:
    """Strings joined as one string; content blocks (or a mix) as one block list."""
    if isinstance(head, str) and isinstance(tail, str):
        return head + tail

    def blocks(content: Any) -> list[Any]:
        if isinstance(content, str):
            return [{"type": "text", "text": content}] if content else []
        return list(content or ())

    return [*blocks(head), *blocks(tail)]


_HOOKS: dict[str, Any] = {"deliver": _deliver, "again": _again, "join": _join}

#: wraps ``BaseChatModel._generate_with_cache``
model_wrapper = model_turn_wrapper(_read, package="langchain", applies=in_a_run, **_HOOKS)


class GatheredInterrupt(LoopGuardInterrupt, Exception):
    """A STOP of an async model call, as the ``Exception`` langchain's ``agenerate`` can
    carry: it gathers its ``_agenerate_with_cache`` calls with ``return_exceptions=True``
    and then reads every result that is not an ``Exception`` as an answer, so a plain
    ``LoopGuardInterrupt`` (a ``BaseException``) would become an ``AttributeError``. The
    ``agenerate`` wrapper (:func:`agenerate_wrapper`) raises it again as a plain interrupt."""


def _gathered(stop: LoopGuardInterrupt) -> BaseException:
    return exception_flavour(stop, GatheredInterrupt)


#: wraps ``BaseChatModel._agenerate_with_cache``
amodel_wrapper = model_turn_wrapper(
    _read, package="langchain", applies=in_a_run, interrupt=_gathered, **_HOOKS
)


def agenerate_wrapper(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Wrap ``BaseChatModel.agenerate``: a STOP carried out of its gather as
    :class:`GatheredInterrupt` leaves as the plain ``LoopGuardInterrupt`` again, which the
    frameworks above (a LangGraph retry policy, ``except Exception``) let pass."""

    async def call() -> Any:
        try:
            return await wrapped(*args, **kwargs)
        except GatheredInterrupt as stop:
            raise interrupt_again(stop) from None

    return call()


def _read_answer(model: Any, result: Any) -> dict[str, Any] | None:
    """What the turn says, from the ``ChatResult``'s first generation (the one ``invoke``
    returns; with ``n > 1`` the others are alternatives of the same turn, not turns)."""
    generations = getattr(result, "generations", None)
    if not generations:
        return None
    message = getattr(generations[0], "message", None)
    if message is None:
        return None
    return read_message(model, message, has_text(getattr(message, "content", None)))


def read_message(model: Any, message: Any, text: bool) -> dict[str, Any]:
    """The ``observe_llm_response`` arguments for one answer message; ``text`` says whether
    its content had non-blank text (a stream's reader has dropped the content by then)."""
    # a call whose arguments did not parse (``invalid_tool_calls``) was still asked for
    requested = [
        (str(call.get("name")), call.get("args"))
        for call in [
            *(getattr(message, "tool_calls", None) or ()),
            *(getattr(message, "invalid_tool_calls", None) or ()),
        ]
        if isinstance(call, Mapping)
    ]
    usage = getattr(message, "usage_metadata", None)
    usage = usage if isinstance(usage, Mapping) else {}
    metadata = getattr(message, "response_metadata", None)
    metadata = metadata if isinstance(metadata, Mapping) else {}
    return {
        "model": _first_text(metadata, _MODEL_NAME_KEYS) or _model_name(model),
        "finish_reason": _first_text(metadata, _FINISH_REASON_KEYS),
        "input_tokens": _tokens(usage.get("input_tokens")),
        "output_tokens": _tokens(usage.get("output_tokens")),
        "empty": not requested and not text,
        "requested_tool_calls": requested,
        "agent_name": current_agent(),
    }


def has_text(content: Any) -> bool:
    """A string, or content blocks of which one is (or carries) non-blank text."""
    if isinstance(content, str):
        return bool(content.strip())
    for block in content or ():
        text = block.get("text") if isinstance(block, Mapping) else block
        if isinstance(text, str) and text.strip():
            return True
    return False


def _first_text(metadata: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = metadata.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _model_name(model: Any) -> str | None:
    """The model the chat model class was configured with (``model_name`` or ``model``)."""
    for name in _MODEL_NAME_KEYS:
        value = getattr(model, name, None)
        if isinstance(value, str) and value:
            return value
    return None


def _tokens(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
