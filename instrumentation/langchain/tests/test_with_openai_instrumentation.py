"""Two instrumentations in one process: our OpenAI SDK package below ``ChatOpenAI``.

``ChatOpenAI`` calls the OpenAI SDK, which ``otel-loopguard-openai`` instruments too: that
package reports each model call it sees (a stream when it ends). This package reports a
turn only when no package below did, which marks the model turn open around the call. A
turn must count once, or token budgets and ``max_steps`` trip at half their size.

The OpenAI API is the OpenAI suite's scripted one (``instrumentation/openai/tests``) behind
a loopback HTTP server, the one stand-in, because the network is out of reach; above it the
real OpenAI SDK and the real ``langchain-openai``. ``scripts/run_tests.py`` installs our
OpenAI package here (``install-also`` in pyproject.toml). Each test also has a turn of a
scripted model nobody reports below, so it fails with this package's wrappers removed too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from agents import (
    ANSWER,
    TokenStreamingChatModel,
    ToolCounter,
    make_tools,
    priced_turn,
    streamed_answer,
)
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_openai import ChatOpenAI
from otel_loopguard_testing import openai_package_fixture
from otel_loopguard_testing.scripted_openai import ScriptedAPI, Turn

from otel_loopguard.guard.decorators import agent_run

QUESTION = [HumanMessage("How much is the Pro plan?")]


with_openai_package = openai_package_fixture()


@pytest.fixture
def scripted_openai() -> Iterator[Callable[[list[Turn]], ChatOpenAI]]:
    """A ``ChatOpenAI`` (streaming its usage too) talking to a scripted API on loopback."""
    servers: list[Callable[[], None]] = []

    def make(turns: list[Turn]) -> ChatOpenAI:
        base_url, stop = ScriptedAPI(turns).serve()
        servers.append(stop)
        return ChatOpenAI(
            model="gpt-test",
            base_url=base_url,
            api_key="test-key",
            max_retries=0,
            stream_usage=True,
        )

    yield make
    for stop in servers:
        stop()


def _chat_spans(harness: Any) -> list[Any]:
    return [
        span
        for span in harness.spans()
        if (span.attributes or {}).get("gen_ai.operation.name") == "chat"
    ]


async def _astreamed_answer(model: Any, messages: list[BaseMessage]) -> Any:
    answer = None
    async for chunk in model.astream(messages):
        answer = chunk if answer is None else answer + chunk
    return answer


@pytest.mark.parametrize("call", ["stream", "astream", "invoke"])
def test_a_chat_openai_turn_the_openai_package_reported_counts_once(
    with_openai_package, scripted_openai, call
):
    # 40 + 10 tokens from ChatOpenAI, 40 + 10 from a model nobody reports below: 100 in
    # all, exactly the budget, so counting the OpenAI turn twice (150) would stop the run
    harness = with_openai_package(mode="enforce", token_budget=100)
    openai_model = scripted_openai(
        [Turn(tool_calls=[("lookup", {"topic": "pricing"})], input_tokens=40, output_tokens=10)]
    )
    unreported = TokenStreamingChatModel(messages=iter([priced_turn(ANSWER)]))
    counter = ToolCounter()
    (lookup,) = [tool for tool in make_tools(counter) if tool.name == "lookup"]
    messages: list[BaseMessage] = list(QUESTION)

    with agent_run("writer", tracer=harness.app_tracer()):
        if call == "stream":
            first = streamed_answer(openai_model, messages)
        elif call == "astream":  # the async client, in a task that copied the run's context
            first = asyncio.run(_astreamed_answer(openai_model, messages))
        else:
            first = openai_model.invoke(messages)
        messages.append(first)
        messages.extend(lookup.invoke(tool_call) for tool_call in first.tool_calls)
        final = streamed_answer(unreported, messages)

    assert [c["args"] for c in first.tool_calls] == [{"topic": "pricing"}]
    assert counter["lookup"] == 1 and final.content == ANSWER
    assert len(_chat_spans(harness)) == 1  # the OpenAI package saw the ChatOpenAI call
    (run,) = harness.named("invoke_agent writer")
    assert run.attributes["gen_ai.usage.input_tokens"] == 80
    assert run.attributes["gen_ai.usage.output_tokens"] == 20
    assert harness.run_state("writer") == "completed"
    harness.assert_every_span_ended_once()


def test_an_abandoned_chat_openai_stream_is_counted_by_neither_package(
    with_openai_package, scripted_openai
):
    harness = with_openai_package(mode="enforce")
    openai_model = scripted_openai([Turn(text=ANSWER, input_tokens=40, output_tokens=10)])
    streamed = TokenStreamingChatModel(messages=iter([priced_turn(ANSWER)]))

    with agent_run("writer", tracer=harness.app_tracer()):
        for _chunk in openai_model.stream(QUESTION):
            break
        streamed_answer(streamed, QUESTION)

    assert len(_chat_spans(harness)) == 1
    (run,) = harness.named("invoke_agent writer")  # the streamed turn only
    assert run.attributes["gen_ai.usage.input_tokens"] == 40
    assert run.attributes["gen_ai.usage.output_tokens"] == 10
    harness.assert_every_span_ended_once()
