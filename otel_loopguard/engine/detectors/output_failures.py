"""Failure markers in the output of a tool call that itself succeeded.

A test runner, a build or a script run through a tool often *succeeds* as a call (the tool
returned its output) while the output says the work failed: ``3 failed, 10 passed``, a
``Traceback (most recent call last):``, ``FAIL: test_x``, ``Exit code: 1``. The premature
end-of-turn guard (:mod:`~otel_loopguard.engine.detectors.premature_end`) counts such a
result as a failing tool call, as the reference agent loop does.

Only marker *shapes* count, never the word "error" in prose: a log file read, a grep hit or
``0 errors`` is no failure. A marker is one of (each within one line; "line-anchored"
means at the start of a line, after blanks):

- a failing test report: line-anchored ``FAIL:``, ``FAIL <file>.js``, ``--- FAIL:``,
  ``FAIL`` alone, ``FAILED (failures=…)``, ``FAILED <path>::<test>``, ``ERROR: <test> (``,
  ``ERROR <path>::<test>``, a ``=== ERRORS ===`` / ``=== FAILURES ===`` section, ``test
  result: FAILED``; a summary with a non-zero count: ``3 failed``, ``2 failing``, ``1 error
  in 0.2s``, ``Found 2 errors``;
- a Python traceback: line-anchored ``Traceback (most recent call last):``, or an
  ``AssertionError`` line (``E   AssertionError: …`` as pytest writes it);
- a line-anchored error line of a failing program: ``ValueError: …``, ``Error: …``,
  ``error: …``, ``error[E0308]: …``, ``fatal: …``;
- a non-zero exit code: ``Exit code: 1``, ``exit status 2``, ``[Command finished with exit
  code 1]``, ``Process exited with code 1``, or an ``exit_code`` / ``returncode`` field of a
  structured output (``status_code`` is not one: an HTTP tool's 200 is no exit code).

Outputs can be huge, so only a capped head and tail of each text is looked at
(:mod:`~otel_loopguard.engine.detectors.output_text`, shared with the shell-failure hint):
a cheap substring screen first, then the regexes on the few lines that hold a needle. A
10 MB output costs what an 8 KB one does.
"""

from __future__ import annotations

import re
from typing import Any

from otel_loopguard.engine.detectors.output_text import suspect_lines, texts_and_code

_TEXT_KEYS = ("stdout", "stderr", "output", "result", "content", "text", "message", "error")
_EXIT_KEYS = ("exit_code", "exitCode", "returncode", "return_code", "exit_status")

#: substrings one of which every marker holds (the screen) and whose lines are looked at
_NEEDLES = (
    "FAIL",
    "ERROR",
    "Traceback",
    "AssertionError",
    "failed",
    "failing",
    "rror",
    "xit code",
    "xit status",
    "xited with",
    "fatal:",
)

# (label, pattern): the label names the failure in a recommendation (no raw content)
_MARKERS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "failing tests",
        re.compile(
            r"^[ \t]*(?:--- FAIL: |FAIL: |FAIL\t|FAIL[ \t]*$|FAIL \S+\.(?:[cm]?[jt]sx?|py)\b"
            r"|FAILED \(|FAILED \S+::|FAILED[ \t]*$|ERROR: \S+ \(|ERROR \S+::"
            r"|=+ (?:ERRORS|FAILURES) =+)"
            r"|\btest result: FAILED\b"
            r"|(?:^|[\s,;(|])[1-9]\d* (?:failed|failing)(?=[,;|)]| in |[ \t]*$)"
            r"|(?:^|[\s,;(])[1-9]\d* errors? (?:in \d|during collection)"
            r"|^[ \t]*Found [1-9]\d* errors?\b",
            re.M,
        ),
    ),
    (
        "a traceback",
        re.compile(
            r"^[ \t]*Traceback \(most recent call last\):"
            r"|^[ \t]*(?:E[ \t]+)?(?:\w+\.)*AssertionError\b",
            re.M,
        ),
    ),
    (
        "a non-zero exit code",
        re.compile(
            r"^\W*(?:(?:process|command)[ \w]{0,20}? )?(?:with )?exit (?:code|status)"
            r"[ \t:=]*[1-9]\d*\b|\bexited with (?:exit )?code [1-9]\d*\b"
            r"|\bcompleted with exit code [1-9]\d*\b|\bnon-zero exit status [1-9]\d*\b",
            re.M | re.I,
        ),
    ),
    (
        "an error",
        re.compile(
            r"^[ \t]*(?:(?:\w+\.)*[A-Z]\w*(?:Error|Exception)|Error|error(?:\[E\d+\])?|fatal): ",
            re.M,
        ),
    ),
)


def _may_fail(text: str) -> bool:
    """Cheap screen: every marker holds one of the needles (C-speed substring tests)."""
    return (
        "FAIL" in text
        or "ERROR" in text
        or "Traceback" in text
        or "rror" in text
        or "failed" in text
        or "failing" in text
        or "xit " in text
        or "xited with" in text
        or "fatal:" in text
    )


def output_failure(output: Any, exit_code: Any = None) -> str | None:
    """What the output of a successful call says went wrong (a short label, no raw
    content), or ``None`` when it carries no failure marker."""
    texts, code = texts_and_code(output, _TEXT_KEYS, _EXIT_KEYS)
    if code is None and isinstance(exit_code, int) and not isinstance(exit_code, bool):
        code = exit_code
    if code:
        return f"exit code {code}"
    lines = [line for text in texts if _may_fail(text) for line in suspect_lines(text, _NEEDLES)]
    if not lines:
        return None
    for label, pattern in _MARKERS:
        for line in lines:
            if pattern.search(line):
                return label
    return None
