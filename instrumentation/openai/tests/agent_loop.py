"""A hand-written agent loop over the OpenAI SDK, as an application would write one.

It marks its run with ``guard.agent_run`` and its tool executions with ``guard.tool_call``;
the model calls are seen by the instrumentation alone. It follows replan recommendations
the way the README tells users to: ``guard.on_decision`` hands the decision to the loop,
which injects ``decision.recommendation`` as the next user message.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from otel_loopguard.decisions import Action, Decision
from otel_loopguard.enforcement import get_guard

TOOL_SCHEMAS = [
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
class LoopOutcome:
    answer: str | None = None
    turns: int = 0
    injected: list[str] = field(default_factory=list)


def run_chat_agent(
    client: Any,
    tracer: Any,
    tools: dict[str, Callable[..., Any]],
    *,
    max_turns: int = 8,
    max_tokens: int | None = None,
) -> LoopOutcome:
    guard = get_guard()
    outcome = LoopOutcome()
    pending: list[Decision] = []
    guard.on_decision(lambda decision, _event: pending.append(decision))
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Find the pricing page."}]
    extra = {"max_tokens": max_tokens} if max_tokens else {}
    with guard.agent_run(tracer, "assistant"):
        while outcome.turns < max_turns:
            outcome.turns += 1
            pending.clear()
            completion = client.chat.completions.create(
                model="gpt-test", messages=messages, tools=TOOL_SCHEMAS, **extra
            )
            message = completion.choices[0].message
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
                output = _execute(guard, tracer, tools, call.function.name, arguments, call.id)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
    return outcome


def _execute(
    guard: Any,
    tracer: Any,
    tools: dict[str, Callable[..., Any]],
    name: str,
    arguments: dict[str, Any],
    call_id: str,
) -> str:
    try:
        with guard.tool_call(tracer, name, arguments, call_id=call_id) as call:
            result = tools[name](**arguments)
            call.set_result(result)
        return str(result)
    except Exception as exc:  # the model sees the error, as in most agent loops
        return f"error: {exc}"
