"""What the framework suites' scripted models and tools share, whatever the framework.

Each suite's ``tests/scripted_models.py`` keeps the framework's own model class (a real
subclass of the framework's model base, answering from a script); the parts that are the
same everywhere live here:

- ``Answer``: what a scripted model answers on a call: a text, or a list of
  ``(tool name, arguments)`` calls; a script is ``script(n) -> Answer``, ``n`` counting the
  model's calls from 1. :func:`always` is the script of a model that answers the same;
  :func:`looping_script` and :func:`productive_script` are the two agents every suite runs.
- :class:`CountingSearch`: a ``search(query)`` tool that records every execution (the side
  effect a loop repeats); a suite whose framework wants its tools declared its own way
  overrides :meth:`CountingSearch.make_tool`.
- :class:`ToolCounter`: counts the real executions of several tools' bodies, per name.
- :func:`forbidden`: a search answer that fails for good (the permanent-failure detector's
  case).
- :func:`sdk_chat_attributes`: the attributes of the ``chat`` span a provider SDK's
  instrumentation makes below a model (GenAI conventions, with usage).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: what a scripted model answers: a text, or a list of (tool name, arguments) calls
Answer = str | list[tuple[str, dict[str, Any]]]

#: the question the agents of the framework suites are asked
QUESTION = "find the pricing page"


def always(answer: Answer) -> Callable[[int], Answer]:
    """The script of a model that answers ``answer`` on every call."""
    return lambda n: answer


def looping_script() -> Callable[[int], Answer]:
    """A looping agent's model: the same search on every turn, forever."""
    return always([("search", {"query": "pricing"})])


def productive_script(search: CountingSearch, searches: int = 3) -> Callable[[int], Answer]:
    """A productive agent's model: ``searches`` different searches, then the answer
    ``found after {executions} searches``."""

    def script(n: int) -> Answer:
        if n <= searches:
            return [("search", {"query": f"pricing page {n}"})]
        return f"found after {len(search.executions)} searches"

    return script


def forbidden(query: str, n: int) -> str:
    """A search answer that fails for good: the tool raises on every call."""
    raise PermissionError("403 Forbidden: /docs/pricing")


class CountingSearch:
    """A ``search(query)`` tool that records every execution in :attr:`executions` and
    answers ``answer(query, n)`` (``n`` counting the executions from 1; ``"no results"``
    by default). :attr:`tool` is what an agent is given: the plain function here, or what
    a subclass's :meth:`make_tool` declares."""

    def __init__(self, answer: Callable[[str, int], str] | None = None) -> None:
        self.executions: list[str] = []
        self._answer = answer or (lambda query, n: "no results")
        self.tool = self.make_tool()

    def execute(self, query: str) -> str:
        """One execution of the tool's body: recorded, then answered."""
        self.executions.append(query)
        return self._answer(query, len(self.executions))

    def make_tool(self) -> Any:
        def search(query: str) -> str:
            """Search the documentation."""
            return self.execute(query)

        return search


@dataclass
class ToolCounter:
    """Counts real executions of the tool bodies, per tool name: each body calls
    ``hit(name)``; ``counter[name]`` is how often it ran."""

    calls: dict[str, int] = field(default_factory=dict)

    def hit(self, name: str) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1

    def __getitem__(self, name: str) -> int:
        return self.calls.get(name, 0)


def sdk_chat_attributes(model: str, input_tokens: int, output_tokens: int) -> dict[str, Any]:
    """The attributes of the ``chat {model}`` span a provider SDK's instrumentation makes
    for one model call (an OpenAI or Anthropic instrumentation below the framework)."""
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": model,
        "gen_ai.usage.input_tokens": input_tokens,
        "gen_ai.usage.output_tokens": output_tokens,
    }
