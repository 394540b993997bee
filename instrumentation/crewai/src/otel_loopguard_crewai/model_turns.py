"""The model side of a CrewAI agent step, for budgets, max steps and repeated tool steps.

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

import json
from collections.abc import Callable
from typing import Any


def parse_arguments(raw: Any) -> Any:
    """Tool arguments as JSON text become a dict, so signatures ignore key order."""
    if isinstance(raw, str):
        try:
            return json.loads(raw) if raw.strip() else {}
        except ValueError:
            return raw
    return raw


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


def observed_llm_response(
    guard_provider: Callable[[], Any],
    wrapped: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    llm = kwargs.get("llm", args[0] if args else None)
    guard = guard_provider()
    guard.preflight_llm()
    usage_before = _usage(llm)
    with guard.model_turn() as turn:  # never raises
        answer = wrapped(*args, **kwargs)
    if not turn.needs_report:  # outside a run, or a layer below reported the turn
        return answer
    usage_after = _usage(llm)
    tokens: tuple[int | None, int | None] = (None, None)
    if usage_before is not None and usage_after is not None:
        tokens = (usage_after[0] - usage_before[0], usage_after[1] - usage_before[1])
    requested = _requested(answer)
    guard.observe_llm_response(
        model=getattr(llm, "model", None),
        input_tokens=tokens[0],
        output_tokens=tokens[1],
        empty=answer is None or (isinstance(answer, str) and not answer.strip()),
        requested_tool_calls=requested,
    )
    return answer
