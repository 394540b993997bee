"""A scripted ADK model for offline tests, a tool that counts its runs, and a runner helper.

``ScriptedModel`` is a real ``google.adk.models.BaseLlm`` (the class every model of ADK
implements: Gemini, LiteLLM, Anthropic), not a mock of ADK: it answers call ``n`` (1-based)
of ``generate_content_async`` from a script, with the usage a Gemini response reports, and
streams a text answer word by word when the run asks for SSE streaming. What every
framework's scripted model shares (``Answer``, ``always``, ``CountingSearch``) comes from
``otel_loopguard_testing.scripted_models``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types
from otel_loopguard_testing import scripted_models as shared
from otel_loopguard_testing.scripted_models import QUESTION, Answer, CountingSearch, always

__all__ = ["QUESTION", "Answer", "CountingSearch", "always"]

PROMPT_TOKENS = 40
CANDIDATE_TOKENS = 10


class ScriptedModel(BaseLlm):
    """Answers call ``n`` with ``script(n)``; counts its calls."""

    model: str = "scripted-gemini"
    script: Callable[[int], Answer]
    calls: int = 0
    thoughts_tokens: int | None = None
    #: when set, each call also makes the ``chat`` span a provider SDK's instrumentation
    #: makes (GenAI conventions, with usage), ended when the SDK's answer is complete
    sdk_tracer: Any = None

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.calls += 1
        answer = self.script(self.calls)
        if isinstance(answer, str):
            if stream:
                for word in answer.split():
                    yield LlmResponse(
                        content=types.Content(role="model", parts=[types.Part(text=word + " ")]),
                        partial=True,
                    )
            parts = [types.Part(text=answer)]
        else:
            parts = [
                types.Part(
                    function_call=types.FunctionCall(
                        name=name, args=args, id=f"call_{self.calls}_{index}"
                    )
                )
                for index, (name, args) in enumerate(answer)
            ]
        if self.sdk_tracer is not None:
            attributes = shared.sdk_chat_attributes(self.model, PROMPT_TOKENS, CANDIDATE_TOKENS)
            self.sdk_tracer.start_span(f"chat {self.model}", attributes=attributes).end()
        yield LlmResponse(
            content=types.Content(role="model", parts=parts),
            finish_reason=types.FinishReason.STOP,
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=PROMPT_TOKENS,
                candidates_token_count=CANDIDATE_TOKENS,
                thoughts_token_count=self.thoughts_tokens,
            ),
        )


def looping_agent(search: CountingSearch, name: str = "researcher") -> LlmAgent:
    """The model asks for the same search on every turn, forever."""
    return LlmAgent(
        name=name,
        model=ScriptedModel(script=shared.looping_script()),
        tools=[search.tool],
    )


def productive_agent(search: CountingSearch, searches: int = 3) -> LlmAgent:
    model = ScriptedModel(script=shared.productive_script(search, searches))
    return LlmAgent(name="researcher", model=model, tools=[search.tool])


def new_runner(agent: Any) -> InMemoryRunner:
    return InMemoryRunner(agent=agent, app_name="tests")


def message(text: str = QUESTION) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


async def run_events(
    runner: InMemoryRunner,
    session_id: str = "session-1",
    text: str = QUESTION,
    run_config: RunConfig | None = None,
) -> list[Any]:
    """One invocation through ``Runner.run_async``; its events (a fresh session made first)."""
    service = runner.session_service
    if await service.get_session(app_name="tests", user_id="user", session_id=session_id) is None:
        await service.create_session(app_name="tests", user_id="user", session_id=session_id)
    return [
        event
        async for event in runner.run_async(
            user_id="user", session_id=session_id, new_message=message(text), run_config=run_config
        )
    ]


def run(runner: InMemoryRunner, session_id: str = "session-1", **kwargs: Any) -> list[Any]:
    """:func:`run_events` to its end, bounded in time (a hang fails the test)."""
    return asyncio.run(asyncio.wait_for(run_events(runner, session_id, **kwargs), timeout=60))


def final_text(events: list[Any]) -> str | None:
    for event in reversed(events):
        if event.content and event.content.parts and event.content.parts[0].text:
            return event.content.parts[0].text
    return None
