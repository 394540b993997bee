"""pydantic-ai agents driven offline by ``FunctionModel`` (plain and streaming).

Each scenario counts the real executions of its tool function and the requests its model
received, so tests do not have to trust spans to know how often the tool or the model ran.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.usage import RequestUsage

# pydantic-ai's own OpenTelemetry instrumentation: on, off, or its settings
Instrument = bool | InstrumentationSettings

LOOP_STEPS = 10
FINAL_ANSWER = "Pricing starts at 10 EUR per seat."
CATALOGUE = {
    "pricing page": "pricing: see /pricing",
    "/pricing": "plans: basic, team",
    "team plan price": "team: 10 EUR per seat",
    "currency": "all prices in EUR",
}


# (input, output) tokens a scripted model reports for each answer it does not stream
TurnUsage = tuple[int, int]


@dataclass
class Scenario:
    agent: Agent[None, str]
    model: FunctionModel
    executions: list[str] = field(default_factory=list)
    #: one entry per request the model received (plain or streamed)
    model_calls: list[str] = field(default_factory=list)


def _tool_returns(messages: list[ModelMessage]) -> int:
    return sum(isinstance(part, ToolReturnPart) for message in messages for part in message.parts)


def _plan(
    queries: list[str], final: str, model_calls: list[str], usage: TurnUsage | None = None
) -> FunctionModel:
    """A model that asks for ``queries[i]`` at step i, then answers ``final``.

    With ``usage``, each plain answer reports that usage (else pydantic-ai estimates it).
    """

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        model_calls.append("request")
        step = _tool_returns(messages)
        if step < len(queries):
            parts: list[TextPart | ToolCallPart] = [
                ToolCallPart("search", {"query": queries[step]})
            ]
        else:
            parts = [TextPart(final)]
        if usage is None:
            return ModelResponse(parts=parts)
        return ModelResponse(
            parts=parts, usage=RequestUsage(input_tokens=usage[0], output_tokens=usage[1])
        )

    async def stream(
        messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[str | DeltaToolCalls]:
        model_calls.append("stream")
        step = _tool_returns(messages)
        if step < len(queries):
            yield {0: DeltaToolCall(name="search", json_args=json.dumps({"query": queries[step]}))}
        else:
            words = final.split(" ")
            for index, word in enumerate(words):
                yield word if index == 0 else " " + word

    return FunctionModel(respond, stream_function=stream)


def _searching_agent(
    queries: list[str],
    final: str,
    answer: Callable[[str], str],
    instrument: Instrument | None,
    usage: TurnUsage | None = None,
) -> Scenario:
    """An agent ``researcher`` whose model (:func:`_plan`) asks for the ``queries``, then
    answers ``final``; its ``search`` tool records each query and answers ``answer(query)``."""
    executions: list[str] = []
    model_calls: list[str] = []
    model = _plan(queries, final, model_calls, usage)
    agent: Agent[None, str] = Agent(model, name="researcher")
    if instrument is not None:  # else pydantic-ai's default (``Agent.instrument_all``)
        agent.instrument = instrument

    @agent.tool_plain
    def search(query: str) -> str:
        """Search the knowledge base."""
        executions.append(query)
        return answer(query)

    return Scenario(agent, model, executions, model_calls)


def looping_agent(steps: int = LOOP_STEPS, *, instrument: Instrument | None = None) -> Scenario:
    """The model asks for ``search(query="pricing")`` ``steps`` times; it always gets nothing."""
    return _searching_agent(
        ["pricing"] * steps, "I could not find anything.", lambda query: "no results", instrument
    )


def productive_agent(
    *, instrument: Instrument | None = None, usage: TurnUsage | None = None
) -> Scenario:
    """Distinct searches with changing results, then a final answer: five model turns."""
    return _searching_agent(list(CATALOGUE), FINAL_ANSWER, CATALOGUE.__getitem__, instrument, usage)
