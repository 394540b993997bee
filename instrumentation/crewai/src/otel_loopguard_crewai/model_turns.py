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
"""

from __future__ import annotations

from typing import Any

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


#: wraps ``get_llm_response(llm, messages, ...)`` where the executor's module imported it
llm_response_wrapper = model_turn_wrapper(
    _read, package="crewai", before=_before, asynchronous=False
)
