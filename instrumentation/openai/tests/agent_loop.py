"""A hand-written agent loop over the OpenAI SDK, as an application would write one: the
shared loop of the suites' test support (``run_chat_tool_loop``) calling
``client.chat.completions.create``."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

# the shared test support; put on the path here too, for the apps that import this module
# under ``opentelemetry-instrument`` (with only this folder on PYTHONPATH)
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "_testing"))

from loopguard_testing import CHAT_TOOL_SCHEMAS, ChatLoopOutcome, run_chat_tool_loop


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
