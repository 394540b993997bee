"""Offline CrewAI: a ``BaseLLM`` subclass answers from a script (CrewAI supports custom
LLMs); everything else — the executor Flow, tool parsing, cache, retries — is CrewAI's."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from crewai import Agent, Crew, Task
from crewai.llms.base_llm import BaseLLM
from crewai.tools import tool

# what the scripted model says at step i: ("tool", name, arguments) or ("answer", text)
Move = tuple[str, Any, Any]


class ScriptedLLM(BaseLLM):
    """``native=True``: OpenAI-style tool calls; else ReAct text (Action / Final Answer)."""

    script: Any = None
    native: bool = True
    calls: int = 0

    def call(
        self,
        messages: Any,
        tools: Any = None,
        callbacks: Any = None,
        available_functions: Any = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
    ) -> Any:
        self.calls += 1
        # report usage the way CrewAI's native providers do after each call
        self._track_token_usage_internal(
            {"prompt_tokens": 30, "completion_tokens": 6, "total_tokens": 36}
        )
        kind, first, second = self.script(self.calls)
        if kind == "answer":
            if self.native:
                return first
            return f"Thought: I now know the final answer\nFinal Answer: {first}"
        if self.native:
            return [
                {
                    "id": f"call_{self.calls}",
                    "type": "function",
                    "function": {"name": first, "arguments": json.dumps(second)},
                }
            ]
        return f"Thought: I should use a tool\nAction: {first}\nAction Input: {json.dumps(second)}"

    def supports_function_calling(self) -> bool:
        return self.native

    def supports_stop_words(self) -> bool:
        return False

    def get_context_window_size(self) -> int:
        return 16_000


class CountingSearch:
    """A ``search`` tool that counts its real executions."""

    def __init__(self, answer: Callable[[str, int], str]) -> None:
        self.executions: list[str] = []
        executions = self.executions

        @tool("search")
        def search(query: str) -> str:
            """Search the documentation for a query."""
            executions.append(query)
            return answer(query, len(executions))

        self.tool = search


def make_crew(
    search: CountingSearch,
    script: Callable[[int], Move] | None,
    *,
    native: bool = True,
    max_iter: int = 8,
    llm: Any = None,
) -> Crew:
    """One researcher agent with ``search``; its model answers from ``script``, or is
    ``llm`` (a real provider against a scripted API) when given."""
    if llm is None:
        llm = ScriptedLLM(model="scripted", script=script, native=native)
    agent = Agent(
        role="researcher",
        goal="find the pricing page",
        backstory="a careful researcher",
        llm=llm,
        tools=[search.tool],
        max_iter=max_iter,
        verbose=False,
    )
    task = Task(description="Find the pricing page", expected_output="a URL", agent=agent)
    return Crew(agents=[agent], tasks=[task], verbose=False)


def same_search(step: int) -> Move:
    return ("tool", "search", {"query": "pricing"})
