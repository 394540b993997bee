"""A scripted Strands ``Model`` and small agents built on it: real Strands agents that run
offline, with no provider SDK, network or AWS credentials.

``ScriptedModel`` is a real ``strands.models.Model``: its ``stream`` yields the stream events
a provider's model yields (``messageStart``, ``contentBlockStart``/``Delta``/``Stop`` for
text and ``toolUse`` blocks, ``messageStop`` with the stop reason, ``metadata`` with the
usage); Strands' own ``process_stream`` assembles them into the assistant message.
``script(n)`` (``n`` counts the model's calls from 1) answers a text, or a list of
``(tool, input)`` tool calls. What every framework's scripted model shares (``Answer``,
``CountingSearch``, the SDK's ``chat`` span attributes) comes from
``otel_loopguard_testing.scripted_models``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncGenerator, Callable
from typing import Any

from otel_loopguard_testing import scripted_models
from otel_loopguard_testing.scripted_models import Answer, sdk_chat_attributes
from strands import Agent, tool
from strands.models import Model

__all__ = ["Answer"]

INPUT_TOKENS = 20
OUTPUT_TOKENS = 10

_ids = itertools.count(1)


class ScriptedModel(Model):
    """A model whose answers are scripted; counts its calls. ``sdk_tracer`` (a tracer of the
    test's provider) makes it open a ``chat`` span per call, as a provider SDK's
    instrumentation below the model would (an OpenAI or Anthropic instrumentation)."""

    def __init__(self, script: Callable[[int], Answer], sdk_tracer: Any = None) -> None:
        self.script = script
        self.calls = 0
        self.sdk_tracer = sdk_tracer
        self.config: dict[str, Any] = {"model_id": "scripted-model"}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        return self.config

    async def structured_output(self, output_model, prompt, system_prompt=None, **kwargs):  # type: ignore[no-untyped-def]
        raise NotImplementedError("the scripted model answers no structured output")
        yield {}  # pragma: no cover - makes this an async generator

    async def stream(
        self, messages, tool_specs=None, system_prompt=None, **kwargs: Any
    ) -> AsyncGenerator[dict[str, Any], None]:
        self.calls += 1
        answer = self.script(self.calls)
        if self.sdk_tracer is None:
            for event in _events(answer):
                yield event
            return
        with self.sdk_tracer.start_as_current_span(
            "chat scripted-model",
            attributes=sdk_chat_attributes("scripted-model", INPUT_TOKENS, OUTPUT_TOKENS),
        ):
            for event in _events(answer):
                yield event


def _events(answer: Answer) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"messageStart": {"role": "assistant"}}]
    if isinstance(answer, str):
        events += [
            {"contentBlockStart": {"start": {}}},
            {"contentBlockDelta": {"delta": {"text": answer}}},
            {"contentBlockStop": {}},
        ]
        stop_reason = "end_turn"
    else:
        for name, arguments in answer:
            start = {"toolUse": {"name": name, "toolUseId": f"call-{next(_ids)}"}}
            events += [
                {"contentBlockStart": {"start": start}},
                {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(arguments)}}}},
                {"contentBlockStop": {}},
            ]
        stop_reason = "tool_use"
    usage = {
        "inputTokens": INPUT_TOKENS,
        "outputTokens": OUTPUT_TOKENS,
        "totalTokens": INPUT_TOKENS + OUTPUT_TOKENS,
    }
    events += [
        {"messageStop": {"stopReason": stop_reason}},
        {"metadata": {"usage": usage, "metrics": {"latencyMs": 1}}},
    ]
    return events


class CountingSearch(scripted_models.CountingSearch):
    """A ``search`` tool that records every execution (the side effect a loop repeats),
    declared as a Strands ``@tool``."""

    def make_tool(self) -> Any:
        @tool
        def search(query: str) -> str:
            """Search the web for a query.

            Args:
                query: what to search for
            """
            return self.execute(query)

        return search


class SlowLookup:
    """An async ``lookup`` tool that takes its time; records starts and finishes."""

    def __init__(self, seconds: float = 2.0) -> None:
        self.started = 0
        self.finished = 0
        counter = self

        @tool
        async def lookup(key: str) -> str:
            """Look a key up in a slow service.

            Args:
                key: the key
            """
            counter.started += 1
            await asyncio.sleep(seconds)
            counter.finished += 1
            return f"value of {key}"

        self.tool = lookup


def looping_agent(search: CountingSearch, name: str = "researcher", **kwargs: Any) -> Agent:
    """An agent whose model asks for the same search again and again, then gives up at 8."""

    def script(n: int) -> Answer:
        return [("search", {"query": "weather in Paris"})] if n < 8 else "I give up"

    return Agent(
        name=name,
        model=ScriptedModel(script),
        tools=[search.tool],
        callback_handler=None,
        **kwargs,
    )


def productive_agent(search: CountingSearch, searches: int = 3, **kwargs: Any) -> Agent:
    """An agent that searches different pages, then answers."""

    def script(n: int) -> Answer:
        if n <= searches:
            return [("search", {"query": f"page {n}"})]
        return f"found after {searches} searches"

    return Agent(
        name="researcher",
        model=ScriptedModel(script),
        tools=[search.tool],
        callback_handler=None,
        **kwargs,
    )


def answer_text(result: Any) -> str:
    return "".join(block.get("text", "") for block in result.message["content"])
