"""Consecutive shell failures that rerunning cannot fix: the agent needs a hint.

An agent whose shell command fails with ``command not found`` or ``ModuleNotFoundError``
tends to run it again, unchanged or barely changed. These failures are about the
environment (a missing program, module or file, a quoting mistake), not about the work, so
a nudge ("install the module or use another approach") helps more than another try.

Only failures of that environmental shape count; a command that simply exits non-zero
(failing tests, a grep with no match) is normal iteration and resets the count, like any
shell result that is not one of these failures. Non-shell tools are ignored. The detector
fires at ``shell_failure_threshold`` failures in a row, and again at each further multiple
of it, with a ``recommendation`` naming the failure.

Outputs can be huge (a 10 MB log), so only a capped head and tail of the text is
classified: error lines sit at the start (``bash: foo: command not found``) or at the end
(a traceback's last line). The raw text never goes into evidence unless
``capture_content`` is on; then only the one matching line, capped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Signal
from otel_loopguard.engine.detectors.base import RunCounters, mypyc_attr
from otel_loopguard.engine.detectors.output_text import (
    SCAN_CHARS,
    capped_text,
    suspect_lines,
    texts_and_code,
)
from otel_loopguard.engine.detectors.state_io import export_dataclass, restore_dataclass
from otel_loopguard.engine.detectors.tool_names import ToolNameMatcher
from otel_loopguard.engine.events import Event, EventKind

NAME = "shell_failure"

# enum member lookups are slow on the hot path (Python 3.11): bind them once
_TOOL_RESULT = EventKind.TOOL_RESULT
_TOOL_ERROR = EventKind.TOOL_ERROR


EXCERPT_CHARS = 200
_TEXT_KEYS = ("stderr", "stdout", "output", "error", "result", "content", "text", "message")
_EXIT_KEYS = ("exit_code", "exitCode", "returncode", "return_code", "status_code", "exit_status")

_PY_EXC = r"^[ \t]*(?:[\w]+\.)*"
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "module_not_found",
        re.compile(_PY_EXC + r"ModuleNotFoundError: |(?:^|: )No module named ", re.M),
    ),
    ("import_error", re.compile(_PY_EXC + r"ImportError: |cannot import name ", re.M)),
    (
        "command_not_found",
        re.compile(
            r"command not found|^\S*sh: (?:line )?(?:\d+: )?[^\n:]+: not found"
            r"|is not recognized as an internal or external command"
            r"|is not recognized as (?:the|a) name of a cmdlet"  # PowerShell
            r"|^\S*fish: Unknown command"
            r"|exit (?:code|status)[ :=]*127\b|non-zero exit status 127\b",
            re.M | re.I,
        ),
    ),
    (
        "syntax_error",
        re.compile(
            _PY_EXC + r"(?:SyntaxError|IndentationError|TabError): "
            r"|syntax error near unexpected token|: syntax error|unexpected EOF while looking",
            re.M,
        ),
    ),
    (
        "no_such_file",
        re.compile(
            r"No such file or directory|" + _PY_EXC + r"FileNotFoundError: |can't open file"
            r"|Cannot find path '[^'\n]*' because it does not exist"  # PowerShell
            r"|The system cannot find the (?:file|path) specified",  # cmd.exe
            re.M | re.I,
        ),
    ),
    (
        "permission_denied",
        re.compile(
            r"Permission denied|" + _PY_EXC + r"PermissionError: "
            r"|^Access is denied\.|Access to the path '[^'\n]*' is denied",  # cmd.exe, .NET
            re.M,
        ),
    ),
)

_ERROR_TYPES = {
    "modulenotfounderror": "module_not_found",
    "importerror": "import_error",
    "syntaxerror": "syntax_error",
    "indentationerror": "syntax_error",
    "taberror": "syntax_error",
    "filenotfounderror": "no_such_file",
    "permissionerror": "permission_denied",
}

_EXIT_CODES = {127: "command_not_found", 126: "permission_denied"}

# failure class -> (how the message names it, what to do instead)
HINTS: dict[str, tuple[str, str]] = {
    "command_not_found": (
        "command not found",
        "The program is not installed or not on PATH: install it, or use another tool",
    ),
    "module_not_found": (
        "ModuleNotFoundError",
        "Install the missing module (for example with pip) in the environment the command "
        "runs in, or use another approach",
    ),
    "import_error": (
        "ImportError",
        "Check the installed package version and the imported name, or use another approach",
    ),
    "syntax_error": (
        "a syntax error",
        "Fix the quoting or the code before running it again",
    ),
    "no_such_file": (
        "No such file or directory",
        "List the directory to find the right path, or create the file first",
    ),
    "permission_denied": (
        "Permission denied",
        "Use a path you can write to, or a command that needs no extra permission",
    ),
}


@dataclass(frozen=True, slots=True)
class ShellFailure:
    """A classified failure: its class and, for content capture only, the matching line."""

    failure_class: str
    line: str = ""


def _may_fail(text: str) -> bool:
    """Cheap screen: every pattern above needs one of these substrings.

    Most outputs contain none of them, and a chain of substring tests (C speed, no
    generator) is far cheaper than the line-anchored regexes, so it runs first.
    """
    return (
        "Error" in text
        or "not found" in text
        or "No module" in text
        or "o such file" in text
        or "ermission denied" in text
        or "yntax error" in text
        or "not recognized" in text
        or "127" in text
        or "an't open" in text
        or "cannot import" in text
        or "unexpected EOF" in text
        or "nknown command" in text
        or "annot find" in text
        or "is denied" in text
    )


_NEEDLES = (
    "Error",
    "not found",
    "No module",
    "o such file",
    "ermission denied",
    "yntax error",
    "not recognized",
    "127",
    "an't open",
    "cannot import",
    "unexpected EOF",
    "nknown command",
    "annot find",
    "is denied",
)


def _match(texts: list[str]) -> ShellFailure | None:
    lines = [line for text in texts if _may_fail(text) for line in suspect_lines(text, _NEEDLES)]
    for failure_class, pattern in _PATTERNS:
        for line in lines:
            if pattern.search(line):
                return ShellFailure(failure_class, line.strip()[:EXCERPT_CHARS])
    return None


def classify_shell_failure(event: Event) -> ShellFailure | None:
    """The environmental failure a tool result or error shows, or ``None``.

    Works on any tool event; callers decide whether the tool is a shell tool.
    """
    if event.kind is _TOOL_ERROR and event.error is not None:
        error = event.error
        texts = [capped_text(error.message)] if error.message else []
        by_type = _ERROR_TYPES.get((error.type or "").rsplit(".", 1)[-1].lower())
        if error.type:
            texts.insert(0, f"{error.type}: {texts[0] if texts else ''}")
        found = _match(texts)
        if found is not None:
            return found
        if by_type is not None:
            return ShellFailure(by_type, texts[0][:EXCERPT_CHARS] if texts else "")
        if error.status_code in _EXIT_CODES:
            return ShellFailure(_EXIT_CODES[error.status_code])
        return None
    if event.kind is _TOOL_RESULT:
        output = event.output
        if isinstance(output, str) and len(output) <= 2 * SCAN_CHARS and not event.details:
            # the common case, kept short: a plain, small text
            return _match([output]) if _may_fail(output) else None
        texts, code = texts_and_code(output, _TEXT_KEYS, _EXIT_KEYS)
        found = _match(texts)
        if found is not None:
            return found
        detail_code = event.details.get("exit_code") if event.details else None
        code = code if code is not None else detail_code
        if isinstance(code, int) and code in _EXIT_CODES:
            return ShellFailure(_EXIT_CODES[code])
    return None


@dataclass(slots=True, init=False)
class ShellFailureState:
    """Shell failures in a row and the last one's class and tool."""

    consecutive: int = 0
    failure_class: str = ""
    tool: str = ""

    # Written out for mypyc, which leaves a generated __init__ interpreted (see Event)
    def __init__(
        self,
        consecutive: int = 0,
        failure_class: str = "",
        tool: str = "",
    ) -> None:
        self.consecutive = consecutive
        self.failure_class = failure_class
        self.tool = tool


@mypyc_attr(allow_interpreted_subclasses=True)
class ShellFailureDetector:
    """Fires at ``shell_failure_threshold`` consecutive environmental shell failures."""

    name: ClassVar[str] = NAME
    event_kinds: ClassVar[frozenset[EventKind]] = frozenset(
        {EventKind.TOOL_RESULT, EventKind.TOOL_ERROR}
    )

    def __init__(self, config: LoopGuardConfig) -> None:
        self._threshold = config.shell_failure_threshold
        self._shell_tools = ToolNameMatcher(config.shell_tools)
        self._capture = config.capture_content

    def new_state(self) -> ShellFailureState:
        return ShellFailureState()

    def observe(
        self, event: Event, state: ShellFailureState, counters: RunCounters
    ) -> Signal | None:
        kind = event.kind
        if kind is not _TOOL_RESULT and kind is not _TOOL_ERROR:
            return None
        if not self._shell_tools[event.tool_name]:
            return None
        failure = classify_shell_failure(event)
        if failure is None:
            state.consecutive = 0
            state.failure_class = ""
            return None
        state.consecutive += 1
        state.failure_class = failure.failure_class
        state.tool = (event.tool_name or "")[:100]
        if state.consecutive % self._threshold:
            return None
        label, advice = HINTS[failure.failure_class]
        evidence: dict[str, Any] = {
            "failures": state.consecutive,
            "failure_class": failure.failure_class,
            "tool": state.tool,
        }
        if self._capture and failure.line:
            evidence["line"] = failure.line
        return Signal(
            detector=NAME,
            kind=NAME,
            score=min(0.95, 0.4 + 0.2 * (state.consecutive // self._threshold)),
            message=(
                f"shell tool {state.tool!r} failed {state.consecutive} times in a row with {label}"
            ),
            evidence=evidence,
            recommendation=(
                f"The shell command keeps failing with {label} ({state.consecutive} times "
                f"in a row); running it again will not help. {advice}."
            ),
        )

    def export_state(self, state: ShellFailureState) -> dict[str, Any]:
        return export_dataclass(state)

    def restore_state(self, data: dict[str, Any]) -> ShellFailureState:
        state = restore_dataclass(ShellFailureState, data)
        state.consecutive = max(0, state.consecutive)
        if state.failure_class not in HINTS:
            state.failure_class = ""
        return state
