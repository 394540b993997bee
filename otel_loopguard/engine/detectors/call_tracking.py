"""Small bounded building blocks shared by the call-level detectors.

Several detectors need the same three things: a map that remembers at most N keys and
forgets the least recently used one (per-run state must stay bounded however long the run),
a way to pair a ``tool_result`` / ``tool_error`` with the ``tool_call`` it answers (by
``call_id`` when the source has one, else the latest call of the same tool), and a score
that starts at a base when a threshold is reached and grows towards 1 with the count.

Pairing is done once per event, by the monitor, with :func:`pair_tool_event`: it writes the
call's and the outcome's fingerprints into :class:`RunCounters` before any detector runs.
Three detectors used to keep a pending-call map each and fingerprint the same signatures
three times; one shared map per run costs a third of the memory and time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from zlib import crc32 as _crc32

from otel_loopguard.engine.detectors.base import RunCounters
from otel_loopguard.engine.detectors.fingerprint_table import fingerprint
from otel_loopguard.engine.events import Event, EventKind

# Enum members as module constants: on Python 3.11 ``EventKind.X`` goes through the enum
# metaclass's __getattr__ hook, several times the cost of a global, on every event.
_TOOL_CALL = EventKind.TOOL_CALL
_TOOL_RESULT = EventKind.TOOL_RESULT
_TOOL_ERROR = EventKind.TOOL_ERROR

PENDING_CALLS_CAP = 64  # calls awaiting their result; more in flight at once is unusual


def touch(table: dict[Any, Any], key: Any, value: Any, cap: int) -> None:
    """Set ``table[key] = value`` as the most recent entry, evicting the oldest past ``cap``.

    A plain dict keeps insertion order and weighs a third of an ``OrderedDict``; re-inserting
    a key makes it the newest.
    """
    table.pop(key, None)
    table[key] = value
    if len(table) > cap:
        del table[next(iter(table))]


def bump(table: dict[Any, int], key: Any, cap: int) -> int:
    """Increment the count of ``key`` (LRU-bounded) and return the new count."""
    count = table.get(key, 0) + 1
    touch(table, key, count, cap)
    return count


def table_to_json(table: dict[Any, Any]) -> list[list[Any]]:
    """Oldest first, so :func:`table_from_json` rebuilds the same eviction order."""
    return [[key, value] for key, value in table.items()]


def table_from_json(data: Any, cap: int) -> dict[Any, Any]:
    table: dict[Any, Any] = {}
    if isinstance(data, list):
        for pair in data[-cap:]:
            if isinstance(pair, (list, tuple)) and len(pair) == 2 and isinstance(pair[0], str):
                table[pair[0]] = pair[1]
    return table


def growing_score(count: int, threshold: int, base: float) -> float:
    """``base`` at ``count == threshold``, half-way to 1 at twice the threshold, never 1 + ."""
    if count < threshold:
        return 0.0
    return round(min(1.0, base + (1.0 - base) * (1.0 - threshold / count)), 4)


class PendingCalls:
    """Fingerprints of calls waiting for their result, paired by ``call_id`` or by tool name.

    Plain dicts, oldest forgotten first past :data:`PENDING_CALLS_CAP`: a call whose result
    never comes must not stay forever.
    """

    __slots__ = ("by_id", "by_tool")

    def __init__(self) -> None:
        self.by_id: dict[str, int] = {}
        self.by_tool: dict[str, int] = {}

    def add(self, event: Event, call: int) -> None:
        call_id = event.call_id
        # touch(), inlined: once per tool span
        table, key = (self.by_id, call_id) if call_id else (self.by_tool, event.tool_name or "")
        table.pop(key, None)  # (no id: the next result of this tool answers it)
        table[key] = call
        if len(table) > PENDING_CALLS_CAP:
            del table[next(iter(table))]

    def pop(self, event: Event) -> int | None:
        """The fingerprint of the call that ``event`` (a result or error) answers, if known."""
        if event.call_id:
            found = self.by_id.pop(event.call_id, None)
            if found is not None:
                return found
        return self.by_tool.pop(event.tool_name or "", None)

    def to_json(self) -> dict[str, Any]:
        return {"ids": list(self.by_id.items()), "tools": list(self.by_tool.items())}

    @classmethod
    def from_json(cls, data: Any) -> PendingCalls:
        pending = cls()
        if isinstance(data, Mapping):
            _load_pairs(pending.by_id, data.get("ids"))
            _load_pairs(pending.by_tool, data.get("tools"))
        return pending


def _load_pairs(table: dict[str, int], pairs: Any) -> None:
    for pair in pairs if isinstance(pairs, list) else []:
        if isinstance(pair, (list, tuple)) and len(pair) == 2 and isinstance(pair[1], int):
            _remember(table, str(pair[0]), pair[1])


def _remember(table: dict[str, int], key: str, call: int) -> None:
    touch(table, key, call, PENDING_CALLS_CAP)


def is_error_result(event: Event) -> bool:
    """A ``tool_result`` that is really a failure: MCP's ``isError`` result, as adapters pass it.

    Adapters mark it with ``details["is_error"] = True`` or ``error=ErrorInfo(...)``; a raw MCP
    ``CallToolResult`` (object or dict with ``isError``) in ``output`` counts too.
    """
    if event.kind != _TOOL_RESULT:
        return False
    if event.error is not None or (event.details and event.details.get("is_error")):
        return True
    output = event.output
    if output is None or isinstance(output, (str, bytes, int, float, list)):
        return False  # the usual outputs: nothing to look into
    try:
        if isinstance(output, Mapping):
            return output.get("isError") is True or output.get("is_error") is True
        return getattr(output, "isError", None) is True
    except Exception:  # an exotic output object; not an error result we can recognise
        return False


_AGENT_KEYS_CAP = 1024  # agent names whose key is kept (agents are few; a flood starts over)
_agent_keys: dict[str, int] = {}


def agent_key(agent: str) -> int:
    """The number a sub-agent's call fingerprints are mixed with (memoised, bounded)."""
    key = _agent_keys.get(agent)
    if key is None:
        key = fingerprint(f"agent:{agent}")
        if len(_agent_keys) >= _AGENT_KEYS_CAP:
            _agent_keys.clear()
        _agent_keys[agent] = key
    return key


def pair_tool_event(
    event: Event,
    kind: EventKind,
    pending: PendingCalls,
    counters: RunCounters,
    main_agent: str | None = None,
) -> None:
    """Fill ``counters.call_key`` / ``outcome_key`` / ``failed`` / ``agent_key`` for
    ``event`` (see RunCounters).

    A ``tool_call`` is remembered in ``pending`` until its result or error arrives; that
    answer takes it out again. Other events clear the fields.

    Calls are counted per agent within a run: the call of a sub-agent (an ``actor`` other
    than ``main_agent``, the run's own agent) has its fingerprint mixed with the agent's
    key, so a sub-agent that re-opens what the previous one found is not repeating itself,
    while each agent's own repeats still count (every call-level detector keys on
    ``call_key``). The run's own agent, and events that name no agent, are not mixed.
    """
    if kind is _TOOL_CALL:
        try:  # fingerprint(), inlined: twice per tool span
            call = _crc32(event.signature.encode()) or 1
        except UnicodeEncodeError:
            call = fingerprint(event.signature)
        actor = event.actor
        salt = 0
        if actor is not None and main_agent is not None and actor != main_agent:
            salt = agent_key(actor)
            call = (call ^ salt) or 1
        pending.add(event, call)
        counters.call_key = call
        counters.outcome_key = 0
        counters.failed = False
        counters.agent_key = salt
    elif kind is _TOOL_RESULT or kind is _TOOL_ERROR:
        counters.call_key = pending.pop(event) or 0
        try:
            counters.outcome_key = _crc32(event.signature.encode()) or 1
        except UnicodeEncodeError:
            counters.outcome_key = fingerprint(event.signature)
        counters.failed = kind is _TOOL_ERROR or (
            # is_error_result's first tests, inlined: nearly every answer is a plain value
            not (event.error is None and not event.details and event.output.__class__ is str)
            and is_error_result(event)
        )
        actor = event.actor
        counters.agent_key = (
            agent_key(actor)
            if actor is not None and main_agent is not None and actor != main_agent
            else 0
        )
    else:
        counters.call_key = 0
        counters.outcome_key = 0
        counters.failed = False
        counters.agent_key = 0
