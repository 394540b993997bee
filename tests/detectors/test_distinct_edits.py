"""Distinct code edits are distinct calls (issue 18, point 1), under the real monitor.

A coding agent edits, runs the tests, edits again. Its edits are long (a few KB) and often
differ only far into the text, or only in indentation, which is meaning in Python; the test
output may be the same each time. Neither is a loop: the default policy must not stop it.
The same edit applied again and again with the same answer is one, and is still stopped.
"""

from __future__ import annotations

from scripted_runs import Step, worst_action

from otel_loopguard.engine.decisions import Action

TEST_OUTPUT = "FAILED tests/test_app.py::test_total - assert 41 == 42\n1 failed, 12 passed"


def _module(last_line: str, indent: str = "    ") -> str:
    body = "\n".join(f"{indent}value_{i} = compute({i})  # step {i}" for i in range(60))
    return f"def run():\n{body}\n{indent}{last_line}\n"


def _edit_and_test(contents: list[str]) -> list[Step]:
    steps: list[Step] = []
    for content in contents:
        steps.append(("write_file", {"path": "app.py", "content": content}, "ok"))
        steps.append(("bash", {"command": "pytest -q"}, TEST_OUTPUT))
    return steps


def test_long_edits_that_differ_after_the_cap_are_not_stopped() -> None:
    edits = [_module(f"return value_{i}") for i in range(8)]
    assert all(len(edit) > 2000 and edit[:1500] == edits[0][:1500] for edit in edits)
    action, detectors = worst_action(_edit_and_test(edits))
    assert action <= Action.WARN, detectors


def test_edits_that_differ_only_in_indentation_are_not_stopped() -> None:
    edits = [_module("return value_1", indent=" " * width) for width in (4, 2, 8, 3, 1, 6)]
    action, detectors = worst_action(_edit_and_test(edits))
    assert action <= Action.WARN, detectors


def test_the_same_long_edit_again_and_again_is_stopped() -> None:
    edit = _module("return value_1")
    action, detectors = worst_action(_edit_and_test([edit] * 5))
    # stopped as a cycle of unchanged answers (edit, test, edit, test)
    assert action is Action.STOP and detectors & {"no_progress", "action_cycle"}, detectors
