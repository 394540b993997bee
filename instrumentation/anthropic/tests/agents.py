"""A hand-written tool-use agent on the Anthropic SDK, and the model scripts that drive it.

The agent is the loop every Anthropic tool-use tutorial writes: ask the model, run the
tools it asked for through the loop guard's gate, send back ``tool_result`` blocks, until
the model ends its turn. Tools count their real executions.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from scripted_api import Reply

from otel_loopguard.guard.decorators import agent_run, tool_span

MODEL = "claude-sonnet-5-5"
TOOLS = [
    {
        "name": "search",
        "description": "Search the product knowledge base.",
        "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}},
    },
    {
        "name": "lookup",
        "description": "Look up one topic in the product catalog.",
        "input_schema": {"type": "object", "properties": {"topic": {"type": "string"}}},
    },
]
CATALOG = {
    "pricing": "Pro plan costs 20 EUR per month",
    "limits": "Pro plan allows 5 seats",
    "refunds": "refunds within 30 days",
}
QUESTION = "How much is the Pro plan?"


@dataclass
class ToolBox:
    """The agent's tools; counts real executions per tool."""

    calls: dict[str, int] = field(default_factory=dict)
    fail: bool = False

    def run(self, name: str, arguments: dict[str, Any]) -> str:
        self.calls[name] = self.calls.get(name, 0) + 1
        if self.fail:
            raise PermissionError("permission denied: the knowledge base is offline")
        if name == "search":
            return "no results"
        return CATALOG.get(arguments.get("topic", ""), "unknown topic")

    def __getitem__(self, name: str) -> int:
        return self.calls.get(name, 0)


@dataclass
class AgentResult:
    answer: str
    turns: int
    stop_reasons: list[str]


def _assistant_content(message: Any) -> list[dict[str, Any]]:
    return [block.model_dump(exclude_none=True) for block in message.content]


def _text(message: Any) -> str:
    return "".join(block.text for block in message.content if block.type == "text")


def _run_tools(message: Any, tools: ToolBox, tracer: Any) -> list[dict[str, Any]]:
    results = []
    for block in message.content:
        if block.type != "tool_use":
            continue
        try:
            with tool_span(block.name, block.input, call_id=block.id, tracer=tracer) as call:
                output = tools.run(block.name, block.input)
                call.set_result(output)
            results.append({"type": "tool_result", "tool_use_id": block.id, "content": output})
        except Exception as error:  # the usual agent: the model sees the error text
            results.append(
                {
                    "type": "tool_result",
                    "tool_use_id": block.id,
                    "content": str(error),
                    "is_error": True,
                }
            )
    return results


def _next_messages(message: Any, messages: list[dict[str, Any]], tools: ToolBox, tracer: Any):
    messages.append({"role": "assistant", "content": _assistant_content(message)})
    if message.stop_reason == "max_tokens":
        messages.append({"role": "user", "content": "Continue."})
    elif message.stop_reason == "tool_use":
        messages.append({"role": "user", "content": _run_tools(message, tools, tracer)})


def _conversation(
    tools: ToolBox, tracer: Any, max_turns: int
) -> Generator[dict[str, Any], Any, AgentResult]:
    """The loop itself, whatever the client: yields each request, is sent the model's
    message for it, runs the tools it asked for; returns the result at the end of a turn."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    stop_reasons: list[str] = []
    for turn in range(1, max_turns + 1):
        message = yield {"model": MODEL, "max_tokens": 1024, "tools": TOOLS, "messages": messages}
        stop_reasons.append(message.stop_reason)
        if message.stop_reason in ("end_turn", "stop_sequence"):
            return AgentResult(_text(message), turn, stop_reasons)
        _next_messages(message, messages, tools, tracer)
    return AgentResult("", max_turns, stop_reasons)


def _ask(client: Any, request: dict[str, Any], stream: bool) -> Any:
    if not stream:
        return client.messages.create(**request)
    with client.messages.stream(**request) as events:
        for _event in events:
            pass
        return events.get_final_message()


async def _ask_async(client: Any, request: dict[str, Any], stream: bool) -> Any:
    if not stream:
        return await client.messages.create(**request)
    async with client.messages.stream(**request) as events:
        async for _event in events:
            pass
        return await events.get_final_message()


def run_agent(
    client: Any,
    tools: ToolBox,
    *,
    tracer: Any = None,
    stream: bool = False,
    max_turns: int = 20,
    conversation_id: str | None = None,
) -> AgentResult:
    with agent_run("claude_agent", conversation_id, tracer=tracer):
        conversation = _conversation(tools, tracer, max_turns)
        try:
            request = next(conversation)
            while True:
                request = conversation.send(_ask(client, request, stream))
        except StopIteration as end:
            return end.value


async def run_agent_async(
    client: Any,
    tools: ToolBox,
    *,
    tracer: Any = None,
    stream: bool = False,
    max_turns: int = 20,
    conversation_id: str | None = None,
) -> AgentResult:
    with agent_run("claude_agent", conversation_id, tracer=tracer):
        conversation = _conversation(tools, tracer, max_turns)
        try:
            request = next(conversation)
            while True:
                request = conversation.send(await _ask_async(client, request, stream))
        except StopIteration as end:
            return end.value


# -- model scripts ---------------------------------------------------------------------------

Script = Callable[[list[dict[str, Any]]], Reply]


def _tool_results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = []
    for message in messages:
        content = message.get("content")
        if message["role"] == "user" and isinstance(content, list):
            found.extend(part for part in content if part.get("type") == "tool_result")
    return found


def looping(give_up_after: int | None = None) -> Script:
    """The same search again and again, whatever comes back."""

    def reply(messages: list[dict[str, Any]]) -> Reply:
        if give_up_after is not None and len(_tool_results(messages)) >= give_up_after:
            return Reply(text="I could not find the price.")
        return Reply(tool_calls=[("search", {"query": "pro plan price"})])

    return reply


def productive() -> Script:
    """Distinct lookups, then an answer built from what they returned."""
    topics = ("pricing", "limits", "refunds")

    def reply(messages: list[dict[str, Any]]) -> Reply:
        results = _tool_results(messages)
        if len(results) < len(topics):
            return Reply(tool_calls=[("lookup", {"topic": topics[len(results)]})])
        return Reply(text="Answer: " + "; ".join(str(r["content"]) for r in results))

    return reply


def truncating() -> Script:
    """A model that runs into its output limit every time."""
    return lambda messages: Reply(
        text="The Pro plan costs", stop_reason="max_tokens", output_tokens=1024
    )


def gives_up_silently() -> Script:
    """One tool call; when the tool fails, an empty end of turn (no answer, no explanation)."""

    def reply(messages: list[dict[str, Any]]) -> Reply:
        if not _tool_results(messages):
            return Reply(tool_calls=[("lookup", {"topic": "pricing"})])
        return Reply(text="", stop_reason="end_turn")

    return reply


def sequence(*replies: Reply) -> Script:
    """Fixed replies in order (the last one repeats)."""
    counter = itertools.count()
    return lambda messages: replies[min(next(counter), len(replies) - 1)]
