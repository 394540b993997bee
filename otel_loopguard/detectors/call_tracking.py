"""Small bounded building blocks shared by the call-level detectors.

Several detectors need the same three things: a map that remembers at most N keys and
forgets the least recently used one (per-run state must stay bounded however long the run),
a way to pair a ``tool_result`` / ``tool_error`` with the ``tool_call`` it answers (by
``call_id`` when the source has one, else the latest call of the same tool), and a score
that starts at a base when a threshold is reached and grows towards 1 with the count.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from otel_loopguard.events import Event, EventKind

PENDING_CALLS_CAP = 64  # calls awaiting their result; more in flight at once is unusual


def touch(table: OrderedDict[Any, Any], key: Any, value: Any, cap: int) -> None:
    """Set ``table[key] = value`` as the most recent entry, evicting the oldest past ``cap``."""
    if key in table:
        table.move_to_end(key)
    table[key] = value
    while len(table) > cap:
        table.popitem(last=False)


def bump(table: OrderedDict[Any, int], key: Any, cap: int) -> int:
    """Increment the count of ``key`` (LRU-bounded) and return the new count."""
    count = table.get(key, 0) + 1
    touch(table, key, count, cap)
    return count


def table_to_json(table: OrderedDict[Any, Any]) -> list[list[Any]]:
    """Oldest first, so :func:`table_from_json` rebuilds the same eviction order."""
    return [[key, value] for key, value in table.items()]


def table_from_json(data: Any, cap: int) -> OrderedDict[Any, Any]:
    table: OrderedDict[Any, Any] = OrderedDict()
    if isinstance(data, list):
        for pair in data[-cap:]:
            if isinstance(pair, (list, tuple)) and len(pair) == 2:
                key, value = pair
                table[key] = value
    return table


def growing_score(count: int, threshold: int, base: float) -> float:
    """``base`` at ``count == threshold``, half-way to 1 at twice the threshold, never 1 + ."""
    if count < threshold:
        return 0.0
    return round(min(1.0, base + (1.0 - base) * (1.0 - threshold / count)), 4)


class PendingCalls:
    """Call signatures waiting for their result, paired by ``call_id`` or by tool name."""

    __slots__ = ("by_id", "by_tool")

    def __init__(self) -> None:
        self.by_id: OrderedDict[str, str] = OrderedDict()
        self.by_tool: OrderedDict[str, str] = OrderedDict()

    def add(self, event: Event) -> None:
        if event.call_id:
            touch(self.by_id, event.call_id, event.signature, PENDING_CALLS_CAP)
        touch(self.by_tool, event.tool_name or "", event.signature, PENDING_CALLS_CAP)

    def pop(self, event: Event) -> str | None:
        """The call signature that ``event`` (a result or error) answers, if known."""
        if event.call_id and event.call_id in self.by_id:
            return self.by_id.pop(event.call_id)
        return self.by_tool.pop(event.tool_name or "", None)

    def to_json(self) -> dict[str, Any]:
        return {"ids": table_to_json(self.by_id), "tools": table_to_json(self.by_tool)}

    @classmethod
    def from_json(cls, data: Any) -> PendingCalls:
        pending = cls()
        if isinstance(data, Mapping):
            pending.by_id = table_from_json(data.get("ids"), PENDING_CALLS_CAP)
            pending.by_tool = table_from_json(data.get("tools"), PENDING_CALLS_CAP)
        return pending


def is_error_result(event: Event) -> bool:
    """A ``tool_result`` that is really a failure: MCP's ``isError`` result, as adapters pass it.

    Adapters mark it with ``details["is_error"] = True`` or ``error=ErrorInfo(...)``; a raw MCP
    ``CallToolResult`` (object or dict with ``isError``) in ``output`` counts too.
    """
    if event.kind != EventKind.TOOL_RESULT:
        return False
    if event.error is not None or event.details.get("is_error"):
        return True
    output = event.output
    try:
        if isinstance(output, Mapping):
            return output.get("isError") is True or output.get("is_error") is True
        return getattr(output, "isError", None) is True
    except Exception:  # an exotic output object; not an error result we can recognise
        return False
