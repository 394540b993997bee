"""A hand-written agent loop over ``litellm.completion``, as an application writes one: the
shared loop of the suites' test support (``run_chat_tool_loop``) calling
``litellm.completion`` through the module attribute, as CrewAI and smolagents do."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import litellm
from otel_loopguard_testing import CHAT_TOOL_SCHEMAS, ChatLoopOutcome, run_chat_tool_loop

MODEL = "openai/gpt-test"


def run_agent(
    api_base: str,
    tracer: Any,
    tools: dict[str, Callable[..., Any]],
    *,
    max_turns: int = 8,
    max_tokens: int | None = None,
    conversation_id: str | None = None,
) -> ChatLoopOutcome:
    extra: dict[str, Any] = {"max_tokens": max_tokens} if max_tokens else {}

    def complete(messages: list[dict[str, Any]]) -> Any:
        return litellm.completion(
            model=MODEL,
            messages=messages,
            tools=CHAT_TOOL_SCHEMAS,
            api_base=api_base,
            api_key="test-key",
            **extra,
        )

    return run_chat_tool_loop(
        complete, tracer, tools, max_turns=max_turns, conversation_id=conversation_id
    )
