"""Which tool calls only read: shell commands such as ``cat``, ``grep -n``, ``git diff``.

Coding agents read through a shell as much as through read tools: ``cat src/app.py``,
``grep -rn "def total" src | head``, ``sed -n 40,80p f.py``, ``git status``. The read-only
loop guard (:mod:`otel_loopguard.engine.detectors.read_only_loop`) counts such a call as a
read when its tool is a shell tool (``OTEL_LOOPGUARD_SHELL_TOOLS``) and its command only
reads. The rule, deliberately conservative (a command it cannot read is not read-only):

* the command is split at ``|``, ``&&``, ``||``, ``;``, ``&`` and line ends; every part
  must be read-only;
* a part is read-only when its program (after ``VAR=value`` assignments, by its base name,
  so ``/usr/bin/cat`` counts) is in :data:`READ_ONLY_PROGRAMS`, with the exceptions that
  write: ``sed`` only with ``-n`` and never ``-i``; ``find`` without ``-exec`` / ``-delete``
  / ``-ok`` / ``-fprint``; ``sort`` without ``-o``; ``git`` only with a subcommand of
  :data:`READ_ONLY_GIT`; ``cd`` (moving around reads nothing, changes nothing);
* no output redirection except to ``/dev/null`` or another stream (``2>&1``), no ``tee``,
  no command substitution (``$(...)``, backticks), no quoting the lexer cannot close.

An editor tool's ``view`` command (``str_replace_editor``, ``str_replace_based_edit_tool``
with ``{"command": "view"}``) is a read too. Arguments are looked at in process only, to
decide this; nothing of them is kept or exported.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import Any

READ_ONLY_PROGRAMS = frozenset(
    {
        "cat", "ls", "ll", "dir", "grep", "egrep", "fgrep", "rg", "ag", "ack", "find", "fd",
        "head", "tail", "nl", "wc", "less", "more", "tree", "pwd", "file", "stat", "du",
        "df", "which", "whereis", "type", "echo", "printf", "diff", "cmp", "sort", "uniq",
        "cut", "tr", "column", "realpath", "readlink", "basename", "dirname", "sed", "jq",
        "cd", "true", "env", "printenv", "whoami", "id", "uname", "hostname", "od",
        "hexdump", "strings", "md5sum", "sha1sum", "sha256sum", "git",
    }
)  # fmt: skip
READ_ONLY_GIT = frozenset(
    {
        "status", "diff", "log", "show", "blame", "grep", "ls-files", "ls-tree",
        "rev-parse", "describe", "shortlog", "cat-file", "reflog",
    }
)  # fmt: skip
_FIND_WRITES = frozenset({"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fls"})
_SEPARATORS = frozenset({"|", "||", "&&", ";", "&", ";;", "|&"})
_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", ">&"})
_HARMLESS_TARGETS = frozenset({"/dev/null", "&1", "&2", "1", "2"})
_EDITOR_TOOLS = frozenset({"str_replace_editor", "str_replace_based_edit_tool"})
_COMMAND_KEYS = ("command", "cmd", "script", "commands", "code", "input")
_MAX_COMMAND = 4096  # longer commands are not parsed (and are not read-only)
_MAX_JSON = 65536


def command_text(arguments: Any) -> str | None:
    """The shell command a shell tool's arguments hold, or ``None``.

    A string (the command itself, or the JSON object a model sends), a mapping with a
    ``command`` / ``cmd`` / ``script`` key, or an argv list of strings.
    """
    if isinstance(arguments, str):
        text = arguments.strip()
        if text[:1] == "{" and len(text) <= _MAX_JSON:
            try:
                arguments = json.loads(text)
            except ValueError:
                return text
        else:
            return text
    if isinstance(arguments, Mapping):
        for key in _COMMAND_KEYS:
            value = arguments.get(key)
            if isinstance(value, str):
                return value
            if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
                return shlex.join(value)
        return None
    strings = isinstance(arguments, (list, tuple)) and all(isinstance(a, str) for a in arguments)
    return shlex.join(arguments) if strings and arguments else None


def is_read_only_command(command: str | None) -> bool:
    """Does the shell ``command`` only read (see the module's rule)?"""
    if not command or len(command) > _MAX_COMMAND or "`" in command or "$(" in command:
        return False
    lexer = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:  # an unclosed quote
        return False
    part: list[str] = []
    seen = False
    for index, token in enumerate(tokens):
        if token in _SEPARATORS:
            if part and not _part_reads_only(part):
                return False
            seen = seen or bool(part)
            part = []
            continue
        if token in _REDIRECTS:
            target = tokens[index + 1] if index + 1 < len(tokens) else ""
            if target not in _HARMLESS_TARGETS:
                return False
        part.append(token)
    if part:
        if not _part_reads_only(part):
            return False
        seen = True
    return seen


def _part_reads_only(words: list[str]) -> bool:
    """One simple command (no separators): its program and options only read."""
    words = [word for word in words if word not in ("(", ")", "{", "}")]
    while words and "=" in words[0] and not words[0].startswith("="):
        words = words[1:]  # VAR=value before the program
    if not words:
        return True
    program = words[0].rsplit("/", 1)[-1]
    arguments = words[1:]
    if program not in READ_ONLY_PROGRAMS or "tee" in arguments:
        return False
    if program == "sed":
        in_place = any(a == "-i" or a.startswith(("-i", "--in-place")) for a in arguments)
        return "-n" in arguments and not in_place
    if program == "find":
        return _FIND_WRITES.isdisjoint(arguments)
    if program == "sort":
        return not any(a == "-o" or a.startswith("--output") for a in arguments)
    if program == "git":
        subcommand = next((a for a in arguments if not a.startswith("-")), "")
        return subcommand in READ_ONLY_GIT
    if program == "env":
        return not any(not a.startswith("-") and "=" not in a for a in arguments)
    return True


def is_editor_view(tool_name: str | None, arguments: Any) -> bool:
    """An editor tool asked to ``view`` a file or directory (SWE-agent, OpenHands, Claude)."""
    if not tool_name or tool_name.rsplit(".", 1)[-1].lower() not in _EDITOR_TOOLS:
        return False
    if isinstance(arguments, str) and arguments[:1] == "{" and len(arguments) <= _MAX_JSON:
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return False
    return isinstance(arguments, Mapping) and arguments.get("command") == "view"
