"""The model side of a CrewAI agent step, for budgets, max steps and repeated tool steps
(the kit's model-turn wrapper).

The executor asks the model through ``get_llm_response`` (imported into
``crewai.agents.agent_executor``), whichever LLM class the agent uses (CrewAI's native
providers, LiteLLM, a custom ``BaseLLM``).

- Before the call: the pre-flight check (stopped run, max steps, timeout, token or cost
  budget): in enforce mode a run over budget makes no further model call.
- After it: one ``llm_response`` with the call's token usage (the difference of the LLM's
  cumulative ``get_token_usage_summary()``, CrewAI's own per-call method) and, for native
  function calling, the tool calls the model asked for; unless a model-call
  instrumentation (our OpenAI SDK package, for CrewAI's OpenAI provider) already reported
  this turn, which marks the ``LoopGuard.model_turn`` open around the call.

Delivering a replan's recommendation (enforce mode): ``get_llm_response`` does not send the
``messages`` it is given when the executor passes itself as ``executor_context`` (it sends
the executor's own ``messages``, after the before-call hooks ran on them), so the message
cannot go into that argument. It goes in one step later: the call gets the agent's LLM
behind a proxy (:class:`CarryingLLM`) whose ``call`` / ``acall`` add it, as a
``{"role": "user", "content": ...}`` message, to the end of a copy of the messages the LLM is
asked with: after the tool messages (and CrewAI's own reasoning prompt) the executor put
there. The executor's history is not touched, so the message is in that one request only.

The re-ask (``again``): on a text answer cut off at the token limit, CrewAI's
function-calling path takes the text as the final answer and ends the task. When a model SDK
package below reported the cut (CrewAI's ``get_llm_response`` hands back only the text, so
the finish reason comes from that layer), the same call is made again with the answer so
far as an assistant message and the continuation prompt after it, and the executor gets the
two texts joined. An empty answer is an error in CrewAI (``ValueError``, "Invalid response
from LLM call"), not an end of turn, so there is no premature-end re-ask here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import wrapt

from otel_loopguard.kit.model_turn import ModelCall, model_turn_wrapper
from otel_loopguard.kit.tool_gate import json_arguments


def parse_arguments(raw: Any) -> Any:
    """Tool arguments as JSON text become a dict, so signatures ignore key order (no text
    at all is no arguments)."""
    return json_arguments(raw, blank=dict)


def _usage(llm: Any) -> tuple[int, int] | None:
    try:
        summary = llm.get_token_usage_summary()
        return int(summary.prompt_tokens), int(summary.completion_tokens)
    except Exception:  # an LLM class without usage accounting
        return None


def _requested(answer: Any) -> list[tuple[str, Any]] | None:
    """The tool calls of a native function-calling answer (a list of provider objects)."""
    if not isinstance(answer, list):
        return None
    try:
        from crewai.utilities.agent_utils import extract_tool_call_info
    except Exception:
        return None
    calls = []
    for item in answer:
        info = extract_tool_call_info(item)
        if info is None:
            return None
        _, name, arguments = info
        calls.append((name, parse_arguments(arguments)))
    return calls


def _llm(call: ModelCall) -> Any:
    return call.kwargs.get("llm", call.args[0] if call.args else None)


def _before(call: ModelCall) -> tuple[int, int] | None:
    return _usage(_llm(call))


def _read(call: ModelCall) -> dict[str, Any]:
    llm = _llm(call)
    answer = call.result
    usage_before, usage_after = call.before, _usage(llm)
    tokens: tuple[int | None, int | None] = (None, None)
    if usage_before is not None and usage_after is not None:
        tokens = (usage_after[0] - usage_before[0], usage_after[1] - usage_before[1])
    return {
        "model": getattr(llm, "model", None),
        "input_tokens": tokens[0],
        "output_tokens": tokens[1],
        "empty": answer is None or (isinstance(answer, str) and not answer.strip()),
        "requested_tool_calls": _requested(answer),
    }


class CarryingLLM(wrapt.ObjectProxy):  # type: ignore[misc]
    """The agent's LLM for one ``get_llm_response`` call: ``call`` / ``acall`` send the
    messages they are given plus ``extra`` (our messages) at the end, in a new list; all
    else (usage accounting, the context window, ``isinstance``) is the LLM's own."""

    def __init__(self, llm: Any, extra: Sequence[dict[str, Any]]) -> None:
        super().__init__(llm)
        self._self_extra = tuple(extra)

    @property
    def loopguard_extra(self) -> tuple[dict[str, Any], ...]:
        return self._self_extra

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        return self.__wrapped__.call(_extended(messages, self._self_extra), *args, **kwargs)

    async def acall(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        return await self.__wrapped__.acall(_extended(messages, self._self_extra), *args, **kwargs)


def _extended(messages: Any, extra: tuple[dict[str, Any], ...]) -> Any:
    """A new message list: ``messages`` (a list, or a prompt text as CrewAI's ``call``
    also takes) then ``extra``; anything else is sent as it came."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}, *extra]
    if isinstance(messages, (list, tuple)):
        return [*messages, *extra]
    return messages


def _with_llm(call: ModelCall, extra: Sequence[dict[str, Any]]) -> bool:
    """Put the call's LLM behind a :class:`CarryingLLM` sending ``extra`` too (new
    ``call.args`` / ``call.kwargs``); False when the call has no LLM we know."""
    llm = _llm(call)
    if llm is None or not callable(getattr(llm, "call", None)):
        return False
    if isinstance(llm, CarryingLLM):  # a re-ask already carrying the answer so far
        extra = [*llm.loopguard_extra, *extra]
        llm = llm.__wrapped__
    carrying = CarryingLLM(llm, extra)
    if "llm" in call.kwargs:
        call.kwargs = {**call.kwargs, "llm": carrying}
    elif call.args:
        call.args = (carrying, *call.args[1:])
    else:
        return False
    return True


def _deliver(call: ModelCall, message: str) -> bool:
    """The recommendation as a user message at the end of this request (module docstring)."""
    return _with_llm(call, [{"role": "user", "content": message}])


def _again(call: ModelCall, detector: str) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """The follow-up of a text answer cut off at the token limit: the same request with
    the answer so far as an assistant message (the continuation prompt is delivered after
    it). None for a tool-call answer, an empty one (CrewAI raised on it) or another
    detector."""
    answer = call.result
    if detector != "truncation" or not isinstance(answer, str) or not answer:
        return None
    follow_up = ModelCall(call.instance, call.args, call.kwargs)
    if not _with_llm(follow_up, [{"role": "assistant", "content": answer}]):
        return None
    return follow_up.args, follow_up.kwargs


def _join(first: Any, second: Any) -> Any:
    """One answer: the cut text and its continuation."""
    if isinstance(first, str) and isinstance(second, str):
        return first + second
    return second


#: wraps ``get_llm_response(llm, messages, ...)`` where the executor's module imported it
llm_response_wrapper = model_turn_wrapper(
    _read,
    package="crewai",
    before=_before,
    asynchronous=False,
    deliver=_deliver,
    again=_again,
    join=_join,
)
