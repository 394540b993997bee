"""A hand-written agent loop over the OpenAI SDK, as an application would write one: the
shared loop of the suites' test support (``run_chat_tool_loop``) calling
``client.chat.completions.create``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from otel_loopguard_testing import CHAT_TOOL_SCHEMAS, ChatLoopOutcome, run_chat_tool_loop


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
