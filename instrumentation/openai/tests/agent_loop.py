"""Hand-written agent loops over the OpenAI SDK, as an application would write one: the
shared loop of the suites' test support (``run_chat_tool_loop``) calling
``client.chat.completions.create``, and :func:`run_loop`, a loop that sends only its own
history (no recommendation of its own: in enforce mode delivery adds it)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from conftest import TRACER
from otel_loopguard_testing import CHAT_TOOL_SCHEMAS, ChatLoopOutcome, run_chat_tool_loop

from otel_loopguard.guard import get_guard


def run_chat_agent(
    client: Any,
    tracer: Any,
    tools: dict[str, Callable[..., Any]],
    *,
    max_turns: int = 8,
    max_tokens: int | None = None,
) -> ChatLoopOutcome:
    extra = {"max_tokens": max_tokens} if max_tokens else {}

    def complete(messages: list[dict[str, Any]]) -> Any:
        return client.chat.completions.create(
            model="gpt-test", messages=messages, tools=CHAT_TOOL_SCHEMAS, **extra
        )

    return run_chat_tool_loop(complete, tracer, tools, max_turns=max_turns)


TOOLS = [
    *CHAT_TOOL_SCHEMAS,
    *(
        {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
        for name in ("read_file", "write_file", "bash")
    ),
]


def run_tool(name: str, arguments: dict[str, Any], call_id: str) -> str:
    """The loop's tools: reads return a file's text, ``bash`` fails as a missing program,
    ``fetch`` is forbidden."""
    guard = get_guard()
    try:
        with guard.tool_call(TRACER, name, arguments, call_id=call_id) as call:
            if name == "fetch":
                raise PermissionError("403 forbidden")
            if name == "bash":
                result: Any = {"exit_code": 127, "stderr": "bash: pytest: command not found"}
            else:
                result = f"contents of {arguments.get('path')}"
            call.set_result(result)
        return json.dumps(result) if isinstance(result, dict) else result
    except Exception as exc:
        return f"error: {exc}"


def loop_step(messages: list[dict[str, Any]], completion: Any) -> bool:
    """The hand-written loop's step after an answer: append it, run its tools; False when
    the answer ends the turn. It never adds a message of its own: delivery does."""
    message = completion.choices[0].message
    messages.append(message.model_dump(exclude_none=True))
    if not message.tool_calls:
        return False
    for call in message.tool_calls:
        output = run_tool(call.function.name, json.loads(call.function.arguments), call.id)
        messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
    return True


def run_loop(client: Any, *, turns: int = 12, **request: Any) -> Any:
    """A hand-written agent loop over ``chat.completions.create``; returns the last answer."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test."}]
    with get_guard().agent_run(TRACER, "coder"):
        for _ in range(turns):
            completion = client.chat.completions.create(
                model="gpt-test", messages=messages, tools=TOOLS, **request
            )
            if not loop_step(messages, completion):
                return completion
    return None
