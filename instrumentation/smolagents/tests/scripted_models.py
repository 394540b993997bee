"""Offline smolagents models: ``Model`` subclasses that answer from a script.

smolagents drives everything else (prompting, parsing, tool execution, memory); only the
model's answers are scripted, so these runs exercise the real agent loops.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from smolagents import Model, tool
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
)
from smolagents.monitoring import TokenUsage

Step = tuple[str, dict[str, Any]]


class _ScriptedModel(Model):
    """Step ``i`` of a run (``calls`` counts them) answers from ``script(i)``, each answer
    reporting 20 input and 5 output tokens; a subclass says what the answer is."""

    def __init__(self, script: Callable[[int], Any], model_id: str) -> None:
        super().__init__(model_id=model_id)
        self.script = script
        self.calls = 0

    def generate(self, messages: list[Any], **kwargs: Any) -> ChatMessage:
        self.calls += 1
        return ChatMessage(
            role=MessageRole.ASSISTANT,
            token_usage=TokenUsage(input_tokens=20, output_tokens=5),
            **self._answer(self.script(self.calls)),
        )

    def _answer(self, step: Any) -> dict[str, Any]:
        raise NotImplementedError


class ScriptedToolCallingModel(_ScriptedModel):
    """For ``ToolCallingAgent``: step ``i`` asks for ``script(i)`` = (tool, arguments)."""

    def __init__(self, script: Callable[[int], Step]) -> None:
        super().__init__(script, "scripted-tool-calling")

    def _answer(self, step: Step) -> dict[str, Any]:
        name, arguments = step
        call = ChatMessageToolCall(
            id=f"call_{self.calls}",
            type="function",
            function=ChatMessageToolCallFunction(name=name, arguments=arguments),
        )
        return {"content": None, "tool_calls": [call]}


class ScriptedCodeModel(_ScriptedModel):
    """For ``CodeAgent``: step ``i`` writes the Python snippet ``script(i)``."""

    def __init__(self, script: Callable[[int], str]) -> None:
        super().__init__(script, "scripted-code")

    def _answer(self, step: str) -> dict[str, Any]:
        return {"content": f"Thought: next step.\n<code>\n{step}\n</code>"}


class CountingSearch:
    """A ``search`` tool that counts its real executions."""

    def __init__(self, answer: Callable[[str, int], str]) -> None:
        self.executions: list[str] = []
        answer_fn = answer
        executions = self.executions

        @tool
        def search(query: str) -> str:
            """Search the documentation.

            Args:
                query: what to look for
            """
            executions.append(query)
            return answer_fn(query, len(executions))

        self.tool = search
