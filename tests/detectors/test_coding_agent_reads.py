"""The read tools and read-only shell commands coding agents really use (issue 18, point 9).

A real SWE-agent run scrolled thirteen times through one file until its cost limit with no
nudge: ``scroll_down`` was not a read. These runs go through the real monitor and default
policy, one model turn per call as the span adapters feed it; the twins interleave real
work (an edit, a test run) and must never be nudged.
"""

from __future__ import annotations

import json

import pytest

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Action
from otel_loopguard.engine.detectors.read_only_commands import is_read_only_command
from otel_loopguard.engine.events import Event, EventKind, tool_call, tool_result
from otel_loopguard.engine.monitor import Monitor

RUN = "swe-run"


def _replans(calls: list[tuple[str, object]]) -> list[int]:
    """Indexes of the calls after which the default policy answered ``replan``."""
    monitor = Monitor(LoopGuardConfig())
    replans = []
    for index, (tool, arguments) in enumerate([*calls, ("submit", {})]):
        call = tool_call(RUN, tool, arguments, call_id=f"c{index}")
        turn = Event(EventKind.LLM_RESPONSE, RUN, requested_tool_calls=(call.signature,))
        for event in (turn, call, tool_result(RUN, tool, f"output {index}", call_id=f"c{index}")):
            if monitor.observe(event).action is Action.REPLAN:
                replans.append(index)
    return replans


def test_scrolling_through_one_file_is_nudged() -> None:
    calls: list[tuple[str, object]] = [("open", {"path": "src/models.py"})]
    calls += [("scroll_down", {})] * 12
    assert _replans(calls), "thirteen reads in a row, no nudge"


@pytest.mark.parametrize(
    "tools",
    [
        ["goto", "scroll_up", "search_file", "search_dir", "find_file"],  # SWE-agent
        ["Read", "Grep", "Glob", "LS"],  # Claude Code
    ],
)
def test_coding_agents_read_tools_are_reads(tools: list[str]) -> None:
    calls = [(tools[i % len(tools)], {"path": f"src/m{i}.py"}) for i in range(10)]
    assert _replans(calls)


READ_ONLY_COMMANDS = [
    "cat src/app.py",
    "ls -la src",
    'grep -rn "def total" src | head -20',
    "find . -name '*.py' -not -path './.venv/*'",
    "head -50 setup.py",
    "tail -n 20 log.txt",
    "sed -n 40,80p src/app.py",
    "nl -ba src/app.py | sed -n '1,30p'",
    "git status",
    "git diff HEAD~1 -- src",
    "git log --oneline -5",
    "cd /repo && grep -n TODO README.md 2>/dev/null",
]


def test_read_only_shell_commands_are_reads() -> None:
    calls = [("bash", {"command": command}) for command in READ_ONLY_COMMANDS[:10]]
    assert _replans(calls)
    # Claude Code's Bash tool has a description beside the command
    calls = [
        ("Bash", {"command": command, "description": "look around"})
        for command in READ_ONLY_COMMANDS[2:12]
    ]
    assert _replans(calls)
    # the JSON string a model sends, as a span records it
    calls = [("bash", json.dumps({"command": command})) for command in READ_ONLY_COMMANDS[:10]]
    assert _replans(calls)


@pytest.mark.parametrize("command", READ_ONLY_COMMANDS)
def test_each_read_only_command_is_recognised(command: str) -> None:
    assert is_read_only_command(command)


@pytest.mark.parametrize(
    "command",
    [
        "cat a.py > b.py",
        "sed -i 's/a/b/' f.py",
        "sed -n 1p f.py; rm f.py",
        "find . -name '*.pyc' -delete",
        "find . -exec rm {} \\;",
        "grep x f | tee out.txt",
        "ls && python -m pytest",
        "git checkout -- f.py",
        "git commit -m 'x'",
        "echo $(rm -rf build)",
        "cat `which python`",
        "sort -o sorted.txt data.txt",
        "python -c 'print(1)'",
        "cat 'unclosed",
        "",
    ],
)
def test_commands_that_write_or_run_are_not_reads(command: str) -> None:
    assert not is_read_only_command(command)


def test_reading_between_edits_and_test_runs_is_not_nudged() -> None:
    calls: list[tuple[str, object]] = []
    for i in range(6):
        calls += [
            ("open", {"path": f"src/m{i}.py"}),
            ("bash", {"command": f"grep -n total src/m{i}.py"}),
            ("str_replace_editor", {"command": "str_replace", "path": f"src/m{i}.py"}),
            ("bash", {"command": "python -m pytest -q"}),
        ]
    assert _replans(calls) == []


def test_an_editor_view_is_a_read_but_its_edit_is_not() -> None:
    views = [("str_replace_editor", {"command": "view", "path": f"src/m{i}.py"}) for i in range(10)]
    assert _replans(views)
    edits = [
        ("str_replace_editor", {"command": "create", "path": f"src/m{i}.py", "file_text": "x"})
        for i in range(10)
    ]
    assert _replans(edits) == []
