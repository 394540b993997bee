"""A hand-written agent loop over ``litellm.completion``, as an application writes one: the
shared loop of the suites' test support (``run_chat_tool_loop``) calling
``litellm.completion`` through the module attribute, as CrewAI and smolagents do."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import litellm

# the shared test support; put on the path here too, for the apps that import this module
# under ``opentelemetry-instrument`` (with only this folder on PYTHONPATH)
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "_testing"))

from loopguard_testing import CHAT_TOOL_SCHEMAS, ChatLoopOutcome, run_chat_tool_loop

MODEL = "openai/gpt-test"


def run_agent(
    api_base: str,
    tracer: Any,
    tools: dict[str, Callable[..., Any]],
    *,
    max_turns: int = 8,
    max_tokens: int | None = None,
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

    return run_chat_tool_loop(complete, tracer, tools, max_turns=max_turns)
