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


class ToolNameSet:
    """A configured list of tool names; ``name in tool_set`` applies the module's rule."""

    __slots__ = ("_names",)

    def __init__(self, names: Iterable[str]) -> None:
        self._names = frozenset(normalise_tool_name(name)[0] for name in names if name.strip())

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str) or not name:
            return False
        whole, last = normalise_tool_name(name)
        return whole in self._names or last in self._names

    def __len__(self) -> int:
        return len(self._names)
