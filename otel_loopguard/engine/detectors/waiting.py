"""Waiting: tool calls that wait, so that polling between waits is not taken for a loop.

An agent that polls a CI run sees ``in_progress`` several times before the answer changes;
that is not a loop when it waits between the polls. A call waits when

* its tool is a wait tool: the first word of its name (normalised as tool names are
  matched everywhere, :mod:`~otel_loopguard.engine.detectors.tool_names`) is ``sleep``,
  ``wait`` or ``delay`` (``sleep``, ``wait_for_run``, ``waitForCi``, ``time.sleep``), or
  it is in ``OTEL_LOOPGUARD_WAIT_TOOLS`` (a ``check_later`` or ``poll_ci`` that waits
  before it answers), or
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

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.detectors.read_only_commands import command_text
from otel_loopguard.engine.detectors.tool_names import ToolNameMatcher, normalise_tool_name

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


class WaitRule:
    """Which calls wait, for one configuration: the named rule above plus the configured
    wait tools, and shell tools whose command sleeps.

    Asked for every tool event by three detectors, so each tool name's two traits (it
    waits by its name; it is a shell tool) are worked out once and kept in one dict
    (bounded like the matchers): a known name costs one look-up."""

    __slots__ = ("_named", "_shell", "_traits")

    def __init__(self, config: LoopGuardConfig) -> None:
        self._named = ToolNameMatcher(config.wait_tools)
        self._shell = ToolNameMatcher(config.shell_tools)
        #: tool name -> (waits by its name, is a shell tool)
        self._traits: dict[str | None, tuple[bool, bool]] = {}

    def _traits_of(self, name: str | None) -> tuple[bool, bool]:
        traits = (is_wait_tool(name) or self._named[name], self._shell[name])
        if len(self._traits) >= _MEMO_LIMIT:
            self._traits.clear()
        self._traits[name] = traits
        return traits

    def tool_waits(self, name: str | None) -> bool:
        """The tool itself waits (its name, or ``OTEL_LOOPGUARD_WAIT_TOOLS``)."""
        traits = self._traits.get(name)
        if traits is None:
            traits = self._traits_of(name)
        return traits[0]

    def command_waits(self, name: str | None, arguments: Any) -> bool:
        """A shell tool's call whose command sleeps."""
        if arguments is None:
            return False
        traits = self._traits.get(name)
        if traits is None:
            traits = self._traits_of(name)
        return traits[1] and command_sleeps(arguments)

    def call_waits(self, name: str | None, arguments: Any) -> bool:
        """The call waits: a wait tool, or a shell command that sleeps."""
        traits = self._traits.get(name)
        if traits is None:
            traits = self._traits_of(name)
        return traits[0] or (traits[1] and arguments is not None and command_sleeps(arguments))
