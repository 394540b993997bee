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
in ``OTEL_LOOPGUARD_NOTE_TOOLS`` (default ``think``, ``thinking``, ``thought``, ``reflect``,
``scratchpad``, ``note_to_self``): ``think``, ``Think``, ``functions.think``; not
``think_and_search`` (which may do work). An agent with a note tool of another name (a
``log_reasoning``, a ``plan`` that only writes the plan down) adds it there.
"""

from __future__ import annotations

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.detectors.tool_names import ToolNameMatcher


def note_tools(config: LoopGuardConfig) -> ToolNameMatcher:
    """``matcher[name]``: the tool only records a thought (the configured list's rule)."""
    return ToolNameMatcher(config.note_tools)
