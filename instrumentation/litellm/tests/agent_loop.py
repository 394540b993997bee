"""A hand-written agent loop over ``litellm.completion``, as an application writes one.

It marks its run with ``guard.agent_run`` and its tool executions with ``guard.tool_call``;
the model calls are seen by the LiteLLM instrumentation alone. It follows replan
recommendations the way the README tells users to (``guard.on_decision`` hands the
decision to the loop, which sends ``decision.recommendation`` as the next user message).
It calls ``litellm.completion`` through the module attribute, as CrewAI and smolagents do.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import litellm

from otel_loopguard.decisions import Action, Decision
from otel_loopguard.enforcement import get_guard

MODEL = "openai/gpt-test"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": name,
            "parameters": {"type": "object", "properties": {}, "additionalProperties": True},
        },
    }
    for name in ("search", "fetch")
]


@dataclass
class Outcome:
    answer: str | None = None
    turns: int = 0
    injected: list[str] = field(default_factory=list)


def run_agent(
    api_base: str,
    tracer: Any,
    tools: dict[str, Callable[..., Any]],
    *,
    max_turns: int = 8,
    max_tokens: int | None = None,
) -> Outcome:
    guard = get_guard()
    outcome = Outcome()
    pending: list[Decision] = []
    guard.on_decision(lambda decision, _event: pending.append(decision))
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Find the pricing page."}]
    extra: dict[str, Any] = {"max_tokens": max_tokens} if max_tokens else {}
    with guard.agent_run(tracer, "assistant"):
        while outcome.turns < max_turns:
            outcome.turns += 1
            pending.clear()
            response = litellm.completion(
                model=MODEL,
                messages=messages,
                tools=TOOLS,
                api_base=api_base,
                api_key="test-key",
                **extra,
            )
            message = response.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            replans = [d for d in pending if d.action is Action.REPLAN and d.recommendation]
            if replans:
                outcome.injected.append(replans[-1].recommendation or "")
                messages.append({"role": "user", "content": replans[-1].recommendation})
                continue
            if not message.tool_calls:
                outcome.answer = message.content
                return outcome
            for call in message.tool_calls:
                arguments = json.loads(call.function.arguments or "{}")
                try:
                    with guard.tool_call(tracer, call.function.name, arguments, call_id=call.id):
                        result = str(tools[call.function.name](**arguments))
                except Exception as exc:  # the model sees the error, as in most agent loops
                    result = f"error: {exc}"
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return outcome
