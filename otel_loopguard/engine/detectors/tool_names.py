"""Matching tool names against a configured list, the same way for every detector.

Tool names arrive in many spellings for the same tool: ``read_file`` from a hand-written
agent, ``fs.read_file`` or ``filesystem__read_file`` from MCP clients that prefix the
server, ``mcp:fs:read_file``, ``ReadFile`` or ``read-file`` from other frameworks. A user
who lists ``read_file`` means all of them. The rule:

1. lower-case, ``-`` and spaces become ``_``, camelCase becomes snake_case
   (``ReadFile`` -> ``read_file``);
2. a name matches when it, or its last segment after a server prefix separator
   (``.``, ``/``, ``:`` or ``__``), is in the list (normalised the same way).

So ``fs.read_file`` matches ``read_file``, but ``read_file_and_delete`` does not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"__|[.:/]")


@lru_cache(maxsize=4096)
def normalise_tool_name(name: str) -> tuple[str, str]:
    """``(whole name, last segment)``, both normalised; cached because names repeat."""
    snake = _CAMEL_BOUNDARY.sub("_", name.strip()).lower().replace("-", "_").replace(" ", "_")
    last = _SEPARATORS.split(snake)[-1] or snake
    return snake, last


_MEMO_LIMIT = 1024


class ToolNameMatcher(dict):  # type: ignore[type-arg]
    """A configured list of tool names: ``matcher[name]`` is ``True`` when ``name`` is in it.

    Asked on the hot path for every tool event, so it is a dict of the answers: a known
    name costs one C-level lookup, and ``__missing__`` applies the module's rule to a new
    one and remembers it. Bounded: cleared when ``_MEMO_LIMIT`` names were seen (a lost
    answer is only recomputed). ``None`` (an event without a tool name) is never in it.
    """

    __slots__ = ("names",)

    def __init__(self, names: Iterable[str]) -> None:
        super().__init__()
        self.names = frozenset(normalise_tool_name(name)[0] for name in names if name.strip())

    def __missing__(self, name: object) -> bool:
        found = False
        if isinstance(name, str) and name:
            whole, last = normalise_tool_name(name)
            found = whole in self.names or last in self.names
        if len(self) >= _MEMO_LIMIT:
            self.clear()
        self[name] = found
        return found
