"""Agents of the OpenAI Agents SDK on its own OpenAI models (Chat Completions or
Responses), the OpenAI SDK's real client answering from a script over an httpx mock
transport (``otel_loopguard_testing.scripted_openai``: the one stand-in, the network being
out of reach). Each tool records its real executions."""

from __future__ import annotations

from dataclasses import dataclass, field

from agents import Agent, OpenAIChatCompletionsModel, OpenAIResponsesModel, function_tool
from otel_loopguard_testing.scripted_openai import ScriptedAPI, Turn

LOOP_TURNS = 8
QUERIES = ("pricing page", "/pricing", "team plan price", "currency")
ANSWER = "The team plan costs 10 EUR per seat."
USAGE = (40, 10)  # tokens a turn


@dataclass
class Scenario:
    agent: Agent
    api: ScriptedAPI
    executions: list[str] = field(default_factory=list)


def _agent(turns: list[Turn], answer, model: str) -> Scenario:
    api = ScriptedAPI(turns)
    executions: list[str] = []

    @function_tool
    def search(query: str) -> str:
        """Search the price list."""
        executions.append(query)
        return answer(query)

    model_class = OpenAIResponsesModel if model == "responses" else OpenAIChatCompletionsModel
    sdk_model = model_class(model="gpt-test", openai_client=api.async_client())
    agent = Agent(
        name="researcher", instructions="Find the price.", tools=[search], model=sdk_model
    )
    return Scenario(agent, api, executions)


def _turn(**fields) -> Turn:
    return Turn(input_tokens=USAGE[0], output_tokens=USAGE[1], **fields)


def looping(model: str = "chat") -> Scenario:
    """``search(query="pricing")`` turn after turn, always "no results"."""
    turns = [_turn(tool_calls=[("search", {"query": "pricing"})]) for _ in range(LOOP_TURNS)]
    return _agent([*turns, _turn(text="I gave up.")], lambda query: "no results", model)


def productive(model: str = "chat") -> Scenario:
    """Distinct searches with changing results, then the answer: five turns."""
    turns = [_turn(tool_calls=[("search", {"query": query})]) for query in QUERIES]
    return _agent([*turns, _turn(text=ANSWER)], lambda query: f"results for {query}", model)
