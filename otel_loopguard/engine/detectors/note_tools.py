"""Note tools: calls that only record a thought, so that they are neither new work nor progress.

Agents are often given a ``think`` tool (τ-bench's, Anthropic's "think" tool pattern): it
takes a free-text thought, changes nothing and returns nothing. Each thought is worded
differently, so to the no-progress and permanent-failure detectors it looked like distinct
new work between two identical failing calls, and the loop ``book → think → book → think →
book`` (the same booking refused with the same error each time) was never stopped. A call
of a note tool leaves their "something new happened" marks where they were; every other
detector still sees it (a run that only thinks is still counted and budgeted).

A tool is a note tool when its name (normalised as tool names are matched everywhere,
:mod:`~otel_loopguard.engine.detectors.tool_names`) is one of :data:`NOTE_TOOLS` exactly:
``think``, ``Think``, ``functions.think``; not ``think_and_search`` (which may do work).
"""

from __future__ import annotations

from otel_loopguard.engine.detectors.tool_names import normalise_tool_name

#: tool names that only record a thought
NOTE_TOOLS = frozenset({"think", "thinking", "thought", "reflect", "scratchpad", "note_to_self"})

_MEMO_LIMIT = 1024
_note_tools: dict[str, bool] = {}


def is_note_tool(name: str | None) -> bool:
    """A tool whose name says it only records a thought (memoised, bounded)."""
    if not name:
        return False
    verdict = _note_tools.get(name)
    if verdict is None:
        verdict = normalise_tool_name(name)[1] in NOTE_TOOLS
        if len(_note_tools) >= _MEMO_LIMIT:
            _note_tools.clear()
        _note_tools[name] = verdict
    return verdict
