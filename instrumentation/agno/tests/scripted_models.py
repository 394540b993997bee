"""A scripted Agno model for offline tests, a tool that counts its runs, and agent helpers.

``ScriptedModel`` is a real ``agno.models.base.Model`` (the class every Agno model extends:
OpenAIChat, Claude, Gemini, LiteLLM), not a mock of Agno: it implements the four provider
calls Agno makes (``invoke``, ``ainvoke``, ``invoke_stream``, ``ainvoke_stream``) and answers
call ``n`` (1-based) from a script, with OpenAI-shaped tool calls and the usage a provider
reports; a text answer is streamed word by word. Agno ships no test model of its own.
What every framework's scripted model shares (``Answer``, ``always``, ``CountingSearch``)
comes from ``otel_loopguard_testing.scripted_models``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from agno.agent import Agent
from agno.metrics import MessageMetrics
from agno.models.base import Model
from agno.models.response import ModelResponse
from otel_loopguard_testing import scripted_models as shared
from otel_loopguard_testing.scripted_models import QUESTION, Answer, CountingSearch, always

__all__ = ["QUESTION", "Answer", "CountingSearch", "always"]

PROMPT_TOKENS = 40
COMPLETION_TOKENS = 10


@dataclass
class ScriptedModel(Model):
    """Answers call ``n`` with ``script(n)``; counts its calls."""

    id: str = "scripted-gpt"
    name: str = "ScriptedModel"
    provider: str = "scripted"
    script: Callable[[int], Answer] = field(default=lambda n: "done")
    calls: int = 0
    #: a loop nothing stops ends here (Agno reports the error as the run's output): a test
    #: whose feature is broken fails instead of running forever
    max_calls: int = 30
    #: when set, each call also makes the ``chat`` span a provider SDK's instrumentation
    #: makes (GenAI conventions, with usage), ended when the SDK's answer is complete
    sdk_tracer: Any = None

    def _answer(self) -> Answer:
        self.calls += 1
        if self.calls > self.max_calls:
            raise RuntimeError(f"the scripted model was called more than {self.max_calls} times")
        answer = self.script(self.calls)
        if self.sdk_tracer is not None:
            attributes = shared.sdk_chat_attributes(self.id, PROMPT_TOKENS, COMPLETION_TOKENS)
            self.sdk_tracer.start_span(f"chat {self.id}", attributes=attributes).end()
        return answer

    def _tool_calls(self, answer: Answer) -> list[dict[str, Any]]:
        if isinstance(answer, str):
            return []
        return [
            {
                "id": f"call_{self.calls}_{index}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for index, (name, args) in enumerate(answer)
        ]

    @staticmethod
    def _usage() -> MessageMetrics:
        return MessageMetrics(
            input_tokens=PROMPT_TOKENS,
            output_tokens=COMPLETION_TOKENS,
            total_tokens=PROMPT_TOKENS + COMPLETION_TOKENS,
        )

    def _response(self) -> ModelResponse:
        answer = self._answer()
        return ModelResponse(
            role="assistant",
            content=answer if isinstance(answer, str) else None,
            tool_calls=self._tool_calls(answer),
            response_usage=self._usage(),
        )

    def _deltas(self) -> Iterator[ModelResponse]:
        answer = self._answer()
        if isinstance(answer, str):
            for word in answer.split(" "):
                yield ModelResponse(role="assistant", content=word + " ")
        else:
            yield ModelResponse(role="assistant", tool_calls=self._tool_calls(answer))
        yield ModelResponse(response_usage=self._usage())

    def invoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return self._response()

    async def ainvoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return self._response()

    def invoke_stream(self, *args: Any, **kwargs: Any) -> Iterator[ModelResponse]:
        yield from self._deltas()

    async def ainvoke_stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ModelResponse]:
        for delta in self._deltas():
            yield delta

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> ModelResponse:
        return response  # type: ignore[no-any-return]

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return response  # type: ignore[no-any-return]


def new_agent(model: ScriptedModel, tools: list[Any], name: str = "researcher") -> Agent:
    # telemetry off: Agno would post each run to its API (no network here)
    return Agent(name=name, model=model, tools=tools, telemetry=False)


def looping_agent(search: CountingSearch, name: str = "researcher") -> Agent:
    """The model asks for the same search on every turn, forever."""
    return new_agent(ScriptedModel(script=shared.looping_script()), [search.tool], name)


def productive_agent(search: CountingSearch, searches: int = 3) -> Agent:
    return new_agent(
        ScriptedModel(script=shared.productive_script(search, searches)), [search.tool]
    )
