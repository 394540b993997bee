"""Waiting: tool calls that wait, so that polling between waits is not taken for a loop.

An agent that polls a CI run sees ``in_progress`` several times before the answer changes;
that is not a loop when it waits between the polls. A call waits when

* its tool is a wait tool: the first word of its name (normalised as tool names are
  matched everywhere, :mod:`~otel_loopguard.engine.detectors.tool_names`) is ``sleep``,
  ``wait`` or ``delay`` (``sleep``, ``wait_for_run``, ``waitForCi``, ``time.sleep``), or
* it is a shell call (a tool in ``OTEL_LOOPGUARD_SHELL_TOOLS``) whose command sleeps:
  ``sleep 30``, ``sleep 30 && gh run view``, ``timeout /t 30``, ``Start-Sleep``.

The command is read from the arguments as the read-only rule reads it
(:func:`~otel_loopguard.engine.detectors.read_only_commands.command_text`). The no-progress
detector also counts real time passing as waiting (see there). Only the first
:data:`COMMAND_CHARS` characters of a command are looked at.
"""

from __future__ import annotations

import re
from typing import Any

from otel_loopguard.engine.detectors.read_only_commands import command_text
from otel_loopguard.engine.detectors.tool_names import normalise_tool_name

#: first words of a tool name that make it a wait tool
WAIT_WORDS = frozenset({"sleep", "wait", "delay"})
COMMAND_CHARS = 2000
#: seconds between two tool events of a run that count as waiting by themselves
WAIT_SECONDS = 30.0

_SLEEP_COMMAND = re.compile(
    r"(?i)(?:^|[;&|(`'\"\s])(?:sleep\s+\d|timeout\s+(?:/t\s+)?\d|start-sleep\b|ping\s+-n\s+\d)"
)
_MEMO_LIMIT = 1024
_wait_tools: dict[str, bool] = {}


def is_wait_tool(name: str | None) -> bool:
    """A tool whose name says it waits (memoised, bounded)."""
    if not name:
        return False
    verdict = _wait_tools.get(name)
    if verdict is None:
        last = normalise_tool_name(name)[1]
        verdict = last.split("_", 1)[0] in WAIT_WORDS
        if len(_wait_tools) >= _MEMO_LIMIT:
            _wait_tools.clear()
        _wait_tools[name] = verdict
    return verdict


def command_sleeps(arguments: Any) -> bool:
    """The shell command sleeps (``sleep 30``, ``...; sleep 5; ...``, ``Start-Sleep``)."""
    command = command_text(arguments)
    return command is not None and _SLEEP_COMMAND.search(command[:COMMAND_CHARS]) is not None
