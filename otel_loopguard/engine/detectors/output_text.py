"""The texts of a tool output worth reading for failure markers, capped, its exit code, and
the lines of those texts worth matching.

Two detectors read a tool's output for signs of failure: the shell-failure hint
(:mod:`~otel_loopguard.engine.detectors.shell_failure`, a failed shell call's class) and the
premature end-of-turn guard's markers (:mod:`~otel_loopguard.engine.detectors.output_failures`,
a call that succeeded while its output says the work failed). Both look at the same
shapes (a string or bytes, a dict of ``stdout`` / ``stderr`` / ... with an exit code, MCP
content blocks), each with its own keys, and both must cost the same for a 10 MB output as
for an 8 KB one: only a capped head and tail of each text is kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SCAN_CHARS = 4096  # looked at: the first and the last SCAN_CHARS characters of a text
#: content blocks of a list output looked at (MCP: [{"type": "text", "text": ...}, ...])
BLOCKS = 4


def capped_text(value: Any) -> str:
    """A head-and-tail view of a text (``str`` or bytes), O(SCAN_CHARS) whatever its size;
    ``""`` for anything else."""
    if isinstance(value, (bytes, bytearray)):
        if len(value) > 2 * SCAN_CHARS:
            value = bytes(value[:SCAN_CHARS]) + b"\n" + bytes(value[-SCAN_CHARS:])
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, str):
        if len(value) > 2 * SCAN_CHARS:
            return value[:SCAN_CHARS] + "\n" + value[-SCAN_CHARS:]
        return value
    return ""


def texts_and_code(
    value: Any, text_keys: tuple[str, ...], exit_keys: tuple[str, ...]
) -> tuple[list[str], int | None]:
    """The non-empty capped texts of an output and its exit code (the first of ``exit_keys``
    holding an integer that is not a bool), from a text, a mapping (its ``text_keys``, in
    that order) or a list of content blocks."""
    if isinstance(value, (str, bytes, bytearray)):
        return [capped_text(value)], None
    if isinstance(value, Mapping):
        texts = [capped_text(value[key]) for key in text_keys if key in value]
        code = None
        for key in exit_keys:
            found = value.get(key)
            if isinstance(found, int) and not isinstance(found, bool):
                code = found
                break
        return [text for text in texts if text], code
    if isinstance(value, (list, tuple)):
        texts = [
            capped_text(item.get("text") if isinstance(item, Mapping) else item)
            for item in value[:BLOCKS]
        ]
        return [text for text in texts if text], None
    return [], None


LINES_PER_NEEDLE = 4  # lines looked at per needle, the last ones of a text


def suspect_lines(text: str, needles: tuple[str, ...]) -> list[str]:
    """The lines of ``text`` holding one of ``needles``, the last :data:`LINES_PER_NEEDLE`
    per needle (failures end an output, or open it: both ends are in a capped text), each
    line once.

    Every pattern either detector looks for matches within one line, so its regexes run on
    these short lines only, never across the whole capped text: finding them is C-speed
    substring search.
    """
    lines: list[str] = []
    starts: set[int] = set()
    for needle in needles:
        end = len(text)
        for _ in range(LINES_PER_NEEDLE):
            at = text.rfind(needle, 0, end)
            if at < 0:
                break
            begin = text.rfind("\n", 0, at) + 1
            if begin not in starts:
                starts.add(begin)
                stop = text.find("\n", at)
                lines.append(text[begin : stop if stop >= 0 else len(text)])
            end = begin
    return lines
