"""A scripted ``ChatCompletionClient`` for offline tests, and a tool that counts its runs.

This is a real autogen-core client class (the abstract base every provider client
implements), not a mock of autogen: it answers each ``create`` / ``create_stream`` from a
script, function of the call number, with the usage a provider would report. What every
framework's scripted model shares (``Answer``, ``always``, ``CountingSearch``) comes from
``otel_loopguard_testing.scripted_models``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from typing import Any

from autogen_core import CancellationToken, FunctionCall
from autogen_core.models import (
    ChatCompletionClient,
    CreateResult,
    LLMMessage,
    ModelCapabilities,
    ModelFamily,
    ModelInfo,
    RequestUsage,
)
from autogen_core.tools import FunctionTool, Tool, ToolSchema
from otel_loopguard_testing import scripted_models
from otel_loopguard_testing.scripted_models import Answer, always

__all__ = ["Answer", "always"]

PROMPT_TOKENS = 40
COMPLETION_TOKENS = 10


class ScriptedClient(ChatCompletionClient):
    """Answers call ``n`` (1-based) with ``script(n)``; streams the text word by word."""

    def __init__(self, script: Callable[[int], Answer], model: str = "scripted-model") -> None:
        self._script = script
        self._create_args = {"model": model}
        self.calls = 0
        self._usage = RequestUsage(prompt_tokens=0, completion_tokens=0)

    def _next(self) -> CreateResult:
        self.calls += 1
        answer = self._script(self.calls)
        if isinstance(answer, str):
            content: Any = answer
            finish = "stop"
        else:
            content = [
                FunctionCall(id=f"call_{self.calls}_{i}", name=name, arguments=json.dumps(args))
                for i, (name, args) in enumerate(answer)
            ]
            finish = "function_calls"
        usage = RequestUsage(prompt_tokens=PROMPT_TOKENS, completion_tokens=COMPLETION_TOKENS)
        self._usage = RequestUsage(
            prompt_tokens=self._usage.prompt_tokens + PROMPT_TOKENS,
            completion_tokens=self._usage.completion_tokens + COMPLETION_TOKENS,
        )
        return CreateResult(finish_reason=finish, content=content, usage=usage, cached=False)

    async def create(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = (),
        tool_choice: Any = "auto",
        json_output: Any = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: CancellationToken | None = None,
    ) -> CreateResult:
        return self._next()

    async def create_stream(
        self, messages: Sequence[LLMMessage], **options: Any
    ) -> AsyncGenerator[str | CreateResult, None]:
        """The same scripted turn as ``create``, its text streamed word by word (the
        keyword options autogen passes are those of ``create``)."""
        result = self._next()
        if isinstance(result.content, str):
            for word in result.content.split(" "):
                yield word + " "
        yield result

    async def close(self) -> None:
        return None

    def actual_usage(self) -> RequestUsage:
        return self._usage

    def total_usage(self) -> RequestUsage:
        return self._usage

    def count_tokens(self, messages: Sequence[LLMMessage], *, tools: Any = ()) -> int:
        return 0

    def remaining_tokens(self, messages: Sequence[LLMMessage], *, tools: Any = ()) -> int:
        return 100_000

    @property
    def capabilities(self) -> ModelCapabilities:  # type: ignore[override]
        return ModelCapabilities(vision=False, function_calling=True, json_output=False)

    @property
    def model_info(self) -> ModelInfo:
        return ModelInfo(
            vision=False,
            function_calling=True,
            json_output=False,
            family=ModelFamily.UNKNOWN,
            structured_output=False,
        )


class CountingSearch(scripted_models.CountingSearch):
    """A ``search`` tool that records each real execution, an autogen ``FunctionTool``."""

    def make_tool(self) -> Any:
        async def search(query: str) -> str:
            """Search the documentation."""
            return self.execute(query)

        return FunctionTool(search, description="Search the documentation.", name="search")
