"""Note tools: calls that only record a thought, so that they are neither new work nor progress.

Agents are often given a ``think`` tool (τ-bench's, Anthropic's "think" tool pattern): it
takes a free-text thought, changes nothing and returns nothing. Each thought is worded
differently, so to the no-progress and permanent-failure detectors it looked like distinct
new work between two identical failing calls, and the loop ``book → think → book → think →
book`` (the same booking refused with the same error each time) was never stopped. A call
of a note tool leaves their "something new happened" marks where they were; every other
detector still sees it (a run that only thinks is still counted and budgeted).

A tool is a note tool when its name, or its last segment, normalised as configured tool
lists are matched (:class:`~otel_loopguard.engine.detectors.tool_names.ToolNameMatcher`), is
one of :data:`NOTE_TOOLS`: ``think``, ``Think``, ``functions.think``; not
``think_and_search`` (which may do work).
"""

from __future__ import annotations

from otel_loopguard.engine.detectors.tool_names import ToolNameMatcher

#: tool names that only record a thought
NOTE_TOOLS = frozenset({"think", "thinking", "thought", "reflect", "scratchpad", "note_to_self"})

# the same rule (and memo) as a configured tool list: the whole name or its last segment
_NOTE_MATCHER = ToolNameMatcher(NOTE_TOOLS)


def is_note_tool(name: str | None) -> bool:
    """A tool whose name says it only records a thought."""
    return _NOTE_MATCHER[name]
