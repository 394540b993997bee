"""Two instrumentations in one process: our OpenAI SDK package below ``OpenAIChatModel``.

pydantic-ai's ``OpenAIChatModel`` calls the OpenAI SDK, which ``otel-loopguard-openai``
instruments too: that package reports each model call it sees (a stream when it ends),
which marks the model turn our model-request wrapper holds open around the request, so
this package does not report it again. A turn must count once, or token budgets and
``max_steps`` trip at half their size.

The OpenAI API is the OpenAI suite's scripted one (``instrumentation/openai/tests``) on an
in-memory transport, the one stand-in, because the network is out of reach; above it the
real OpenAI SDK and pydantic-ai's real ``OpenAIChatModel``. ``scripts/run_tests.py``
installs our OpenAI package here (``install-also`` in pyproject.toml). Each run also asks
an expert agent on a ``FunctionModel`` nobody reports below, whose turn only this package
counts, so the tests fail with this package's model-request wrapper removed too.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from otel_loopguard_testing import openai_package_fixture
from otel_loopguard_testing.scripted_openai import ScriptedAPI, Turn
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.usage import RequestUsage

QUESTION = "How much is the Pro plan?"
ANSWER = "The Pro plan costs 20 EUR per seat."
EXPERT_ANSWER = "Pro: 20 EUR per seat"


with_openai_package = openai_package_fixture()


def _expert_model() -> FunctionModel:
    """A model no instrumentation below pydantic-ai sees: 40 + 10 tokens."""

    def respond(messages: Any, info: Any) -> ModelResponse:
        usage = RequestUsage(input_tokens=40, output_tokens=10)
        return ModelResponse(parts=[TextPart(EXPERT_ANSWER)], usage=usage)

    return FunctionModel(respond)


def _assistant(api: ScriptedAPI) -> tuple[Agent[None, str], list[str]]:
    """An assistant on ``OpenAIChatModel`` whose tool asks an expert agent (same run)."""
    model = OpenAIChatModel("gpt-test", provider=OpenAIProvider(openai_client=api.async_client()))
    assistant: Agent[None, str] = Agent(model, name="assistant")
    expert: Agent[None, str] = Agent(_expert_model(), name="expert")
    asked: list[str] = []

    @assistant.tool_plain
    async def ask_expert(question: str) -> str:
        """Ask the pricing expert."""
        asked.append(question)
        return (await expert.run(question)).output

    return assistant, asked


def _chat_spans(harness: Any) -> list[Any]:
    return [
        span
        for span in harness.spans()
        if span.attributes.get("gen_ai.operation.name") == "chat"
        and span.instrumentation_scope.name != "pydantic-ai"
    ]


@pytest.mark.parametrize("how", ["run", "run_stream"])
def test_an_openai_chat_model_turn_the_openai_package_reported_counts_once(
    with_openai_package, how
):
    # two OpenAI turns of 40 + 10, one expert turn of 40 + 10: 150 in all, exactly the
    # budget, so an OpenAI turn counted twice (200 or more) would stop the run
    harness = with_openai_package(mode="enforce", token_budget=150)
    api = ScriptedAPI(
        [
            Turn(
                tool_calls=[("ask_expert", {"question": "Pro plan price"})],
                input_tokens=40,
                output_tokens=10,
            ),
            Turn(text=ANSWER, input_tokens=40, output_tokens=10),
        ]
    )
    assistant, asked = _assistant(api)

    async def drive() -> str:
        if how == "run":
            return (await assistant.run(QUESTION)).output
        async with assistant.run_stream(QUESTION) as streamed:
            return await streamed.get_output()

    output = asyncio.run(drive())

    assert output == ANSWER
    assert asked == ["Pro plan price"]
    assert len(api.requests) == 2
    assert len(_chat_spans(harness)) == 2  # the OpenAI package saw both requests
    (run,) = harness.named("invoke_agent assistant")
    assert run.attributes["gen_ai.usage.input_tokens"] == 3 * 40
    assert run.attributes["gen_ai.usage.output_tokens"] == 3 * 10
    assert harness.run_state("assistant") == "completed"
    harness.assert_every_span_ended_once()
