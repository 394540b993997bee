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

Only inside a run the guard knows (a LangGraph run, or an application's own
``agent_run``): a model called outside any run is left alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_loopguard.kit.model_turn import ModelCall, in_a_run, model_turn_wrapper
from otel_loopguard_langchain.runs import current_agent

# where providers put the finish reason in ``response_metadata``: OpenAI, Gemini and most
# others ``finish_reason``, Anthropic ``stop_reason``, Ollama ``done_reason``, Bedrock
# Converse ``stopReason``
_FINISH_REASON_KEYS = ("finish_reason", "stop_reason", "done_reason", "stopReason")
_MODEL_NAME_KEYS = ("model_name", "model")


def _read(call: ModelCall) -> dict[str, Any] | None:
    return _read_answer(call.instance, call.result)


#: wraps ``BaseChatModel._generate_with_cache`` and ``_agenerate_with_cache``
model_wrapper = model_turn_wrapper(_read, package="langchain", applies=in_a_run)


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
