"""Offline LlamaIndex agents driven by llama-index-core's own ``MockFunctionCallingLLM``.

``MockFunctionCallingLLM(response_generator=...)`` returns whatever ``ChatMessage`` the
generator builds from the conversation so far; ``ToolCallBlock`` parts in it are the tool
calls the agent workflow executes. The tools are real ``FunctionTool`` objects that count
their executions, so tests can assert how many times a tool body really ran.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Sequence
from typing import Any

from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.tools import FunctionTool
from otel_loopguard_testing.scripted_models import ToolCounter

CATALOG = {
    "pricing": "Pro plan costs 20 EUR per month",
    "limits": "Pro plan allows 5 seats",
    "refunds": "refunds within 30 days",
}
USER_MESSAGE = "How much is the Pro plan?"


def make_tools(counter: ToolCounter) -> list[FunctionTool]:
    async def search(query: str) -> str:
        """Search the product knowledge base."""
        counter.hit("search")
        return "no results"

    async def lookup(topic: str) -> str:
        """Look up one topic in the product catalog."""
        counter.hit("lookup")
        return CATALOG.get(topic, "unknown topic")

    return [
        FunctionTool.from_defaults(async_fn=search),
        FunctionTool.from_defaults(async_fn=lookup),
    ]


def make_sync_search(counter: ToolCounter) -> FunctionTool:
    def search(query: str) -> str:
        """Search the product knowledge base."""
        counter.hit("search")
        return "no results"

    return FunctionTool.from_defaults(fn=search)


def _tool_call(name: str, kwargs: dict[str, Any], call_id: str) -> ChatMessage:
    return ChatMessage(
        role=MessageRole.ASSISTANT,
        blocks=[ToolCallBlock(tool_call_id=call_id, tool_name=name, tool_kwargs=kwargs)],
    )


def _tool_results(messages: Sequence[ChatMessage]) -> list[str]:
    return [str(m.content) for m in messages if m.role == MessageRole.TOOL]


Script = Callable[..., ChatMessage]


def looping_script(give_up_after: int | None = None) -> Script:
    """A model stuck on one call: the same search again, ignoring the empty result."""
    ids = itertools.count()

    def respond(messages: Sequence[ChatMessage], **_: Any) -> ChatMessage:
        if give_up_after is not None and len(_tool_results(messages)) >= give_up_after:
            return ChatMessage(role=MessageRole.ASSISTANT, content="I could not find the price.")
        return _tool_call("search", {"query": "pro plan price"}, f"call_{next(ids)}")

    return respond


def productive_script() -> Script:
    """Distinct lookups with changing results, then an answer built from those results."""
    topics = ("pricing", "limits", "refunds")

    def respond(messages: Sequence[ChatMessage], **_: Any) -> ChatMessage:
        results = _tool_results(messages)
        if len(results) < len(topics):
            index = len(results)
            return _tool_call("lookup", {"topic": topics[index]}, f"call_{index}")
        return ChatMessage(role=MessageRole.ASSISTANT, content="Answer: " + "; ".join(results))

    return respond


def build_agent(
    script: Script, counter: ToolCounter, *, name: str = "support_agent", streaming: bool = False
) -> FunctionAgent:
    return FunctionAgent(
        name=name,
        description="Answers product questions.",
        tools=make_tools(counter),
        llm=MockFunctionCallingLLM(response_generator=script),
        streaming=streaming,
    )


def ping_pong_script(target: str) -> Script:
    """An agent that always hands the task over to ``target``."""
    ids = itertools.count()

    def respond(messages: Sequence[ChatMessage], **_: Any) -> ChatMessage:
        return _tool_call(
            "handoff", {"to_agent": target, "reason": "they know better"}, f"h_{next(ids)}"
        )

    return respond


def build_handoff_workflow(counter: ToolCounter) -> AgentWorkflow:
    """Two agents that keep handing the task back and forth: a closed handoff cycle."""
    agents = [
        FunctionAgent(
            name=name,
            description=description,
            tools=make_tools(counter),
            llm=MockFunctionCallingLLM(response_generator=ping_pong_script(other)),
            can_handoff_to=[other],
        )
        for name, other, description in (
            ("alice", "bob", "Billing questions."),
            ("bob", "alice", "Plan questions."),
        )
    ]
    return AgentWorkflow(agents=agents, root_agent="alice")


async def run_to_end(agent: Any, *, max_iterations: int = 60, stream: bool = False) -> Any:
    handler = agent.run(user_msg=USER_MESSAGE, max_iterations=max_iterations)
    if stream:
        async for _event in handler.stream_events():
            pass
    return await handler


def looping_run(
    give_up_after: int | None = None,
) -> tuple[Callable[[], Any], Callable[[], int]]:
    """A fresh looping agent (``looping_script``): a callable that runs it once to the end on
    an event loop of its own (within 30 s), and one that tells how many searches it executed.
    For the checks that invoke the agent themselves, from plain (sync) code."""
    counter = ToolCounter()
    agent = build_agent(looping_script(give_up_after), counter)
    return lambda: asyncio.run(asyncio.wait_for(run_to_end(agent), 30)), lambda: counter["search"]


class UsageLLM(MockFunctionCallingLLM):
    """The scripted model, with usage where providers put it: an OpenAI-style ``raw``.

    ``MockFunctionCallingLLM`` reports no usage; ``llama-index-llms-openai`` keeps the API's
    ``ChatCompletion`` (``usage``, ``choices[0].finish_reason``, ``model``) in
    ``ChatResponse.raw``, so this one puts the same shape there, on the last chunk of a
    stream. ``calls`` counts the model calls really made.
    """

    calls: int = 0
    input_tokens: int = 60
    output_tokens: int = 10

    def _raw(self, message: ChatMessage) -> dict[str, Any]:
        asks = any(isinstance(block, ToolCallBlock) for block in message.blocks)
        return {
            "model": "scripted-gpt",
            "choices": [{"index": 0, "finish_reason": "tool_calls" if asks else "stop"}],
            "usage": {
                "prompt_tokens": self.input_tokens,
                "completion_tokens": self.output_tokens,
            },
        }

    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> Any:
        self.calls += 1
        response = await super().achat(messages, **kwargs)
        response.raw = self._raw(response.message)
        return response

    async def astream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> Any:
        self.calls += 1
        chunks = [chunk async for chunk in await super().astream_chat(messages, **kwargs)]
        chunks[-1].raw = self._raw(chunks[-1].message)

        async def replay() -> Any:
            for chunk in chunks:
                yield chunk

        return replay()


def build_usage_agent(
    script: Script, counter: ToolCounter, *, streaming: bool = False, **usage: int
) -> tuple[FunctionAgent, UsageLLM]:
    """``build_agent`` with a :class:`UsageLLM`; returns the agent and its model."""
    llm = UsageLLM(response_generator=script, **usage)
    agent = FunctionAgent(
        name="support_agent",
        description="Answers product questions.",
        tools=make_tools(counter),
        llm=llm,
        streaming=streaming,
    )
    return agent, llm
