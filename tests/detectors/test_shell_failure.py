"""Shell failure: consecutive environmental shell failures get a hint."""

from __future__ import annotations

import json

import pytest
from sdk_stack import AGENT, sdk_stack, tool_span

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Action
from otel_loopguard.engine.detectors import DEFAULT_DETECTORS
from otel_loopguard.engine.detectors.base import RunCounters
from otel_loopguard.engine.detectors.shell_failure import (
    ShellFailureDetector,
    classify_shell_failure,
)
from otel_loopguard.engine.events import ErrorInfo, Event, tool_call, tool_error, tool_result
from otel_loopguard.engine.monitor import Monitor

RUN = "run-1"
NOT_FOUND = "bash: line 1: rg: command not found"
TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/srv/app/main.py", line 1, in <module>\n'
    "    import yaml\n"
    "ModuleNotFoundError: No module named 'yaml'\n"
)


def _kinds(detector: ShellFailureDetector, state: object, events: list[Event]) -> list:
    signals = [detector.observe(e, state, RunCounters()) for e in events]
    return [s.detector if s else None for s in signals]


def test_registered_under_its_module_name() -> None:
    assert "shell_failure" in [f(LoopGuardConfig()).name for f in DEFAULT_DETECTORS]


def test_second_consecutive_failure_fires_with_a_hint() -> None:
    detector = ShellFailureDetector(LoopGuardConfig())
    state = detector.new_state()
    assert detector.observe(tool_result(RUN, "bash", TRACEBACK), state, RunCounters()) is None
    signal = detector.observe(tool_result(RUN, "bash", TRACEBACK), state, RunCounters())
    assert signal is not None and signal.kind == "shell_failure"
    assert signal.evidence["failures"] == 2
    assert signal.evidence["failure_class"] == "module_not_found"
    assert signal.recommendation is not None
    assert "ModuleNotFoundError" in signal.recommendation
    assert "install the missing module" in signal.recommendation.lower()
    assert "yaml" not in repr(signal)  # no raw output without content capture


def test_success_resets() -> None:
    detector = ShellFailureDetector(LoopGuardConfig())
    events = [
        tool_result(RUN, "bash", NOT_FOUND),
        tool_result(RUN, "bash", "ok"),
        tool_result(RUN, "bash", NOT_FOUND),
        tool_result(RUN, "bash", "3 passed in 0.2s"),
        tool_result(RUN, "bash", NOT_FOUND),
    ]
    assert _kinds(detector, detector.new_state(), events) == [None] * 5


def test_failing_tests_are_iteration_not_a_shell_failure() -> None:
    detector = ShellFailureDetector(LoopGuardConfig())
    output = {"stdout": "FAILED tests/test_x.py::test_y - assert 1 == 2", "exit_code": 1}
    events = [tool_result(RUN, "bash", output)] * 4
    assert _kinds(detector, detector.new_state(), events) == [None] * 4


def test_grep_output_mentioning_errors_is_not_a_failure() -> None:
    output = "app/io.py:12:    except ImportError:\napp/io.py:40:    raise SyntaxError(msg)\n"
    assert classify_shell_failure(tool_result(RUN, "bash", output)) is None


def test_other_tools_are_ignored() -> None:
    detector = ShellFailureDetector(LoopGuardConfig())
    events = [tool_result(RUN, "python_repl", TRACEBACK)] * 3
    assert _kinds(detector, detector.new_state(), events) == [None] * 3
    # ... and do not break a streak of shell failures
    state = detector.new_state()
    events = [
        tool_result(RUN, "bash", NOT_FOUND),
        tool_result(RUN, "read_file", "text"),
        tool_result(RUN, "bash", NOT_FOUND),
    ]
    assert _kinds(detector, state, events) == [None, None, "shell_failure"]


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("zsh: command not found: rg", "command_not_found"),
        ("sh: 1: jq: not found", "command_not_found"),
        ("'rg' is not recognized as an internal or external command,", "command_not_found"),
        ({"stdout": "", "stderr": "", "returncode": 127}, "command_not_found"),
        ("Command failed. Exit code: 127", "command_not_found"),
        ("ImportError: cannot import name 'x' from 'y'", "import_error"),
        ("/usr/bin/python3: No module named pytest", "module_not_found"),
        ("cat: notes.txt: No such file or directory", "no_such_file"),
        ('  File "a.py", line 1\n    def (\nSyntaxError: invalid syntax', "syntax_error"),
        ("bash: -c: line 1: syntax error near unexpected token `)'", "syntax_error"),
        ("touch: cannot touch '/etc/x': Permission denied", "permission_denied"),
        (b"bash: foo: command not found\n", "command_not_found"),
        # Windows shells and fish
        (
            "rg : The term 'rg' is not recognized as the name of a cmdlet, function, script "
            "file, or operable program.",
            "command_not_found",
        ),
        (
            "rg: The term 'rg' is not recognized as a name of a cmdlet, function, script file, "
            "or executable program.",
            "command_not_found",
        ),
        ("fish: Unknown command: rg", "command_not_found"),
        (
            "Get-Content : Cannot find path 'C:\\work\\notes.txt' because it does not exist.",
            "no_such_file",
        ),
        ("The system cannot find the file specified.", "no_such_file"),
        ("The system cannot find the path specified.", "no_such_file"),
        ("Access is denied.", "permission_denied"),
        ("Access to the path 'C:\\Windows\\x.txt' is denied.", "permission_denied"),
        ([{"type": "text", "text": TRACEBACK}], "module_not_found"),
    ],
)
def test_classifies_common_shapes(output: object, expected: str) -> None:
    failure = classify_shell_failure(tool_result(RUN, "bash", output))
    assert failure is not None and failure.failure_class == expected


@pytest.mark.parametrize(
    "output",
    [
        "I cannot find any pricing page for that product.",
        "Unknown command-line flags are ignored.",
        "Access to the dashboard is denied for guests, see the docs.",
        "3 files found",
    ],
)
def test_ordinary_outputs_that_share_a_word_are_not_failures(output: str) -> None:
    assert classify_shell_failure(tool_result(RUN, "bash", output)) is None


def test_tool_errors_are_classified_from_type_and_message() -> None:
    by_type = tool_error(RUN, "bash", ErrorInfo("ModuleNotFoundError", "No module named 'yaml'"))
    failure = classify_shell_failure(by_type)
    assert failure is not None and failure.failure_class == "module_not_found"
    by_message = tool_error(
        RUN, "run_command", ErrorInfo("CalledProcessError", "returned non-zero exit status 127.")
    )
    failure = classify_shell_failure(by_message)
    assert failure is not None and failure.failure_class == "command_not_found"
    timeout = tool_error(RUN, "bash", ErrorInfo("TimeoutExpired", "timed out after 30s"))
    assert classify_shell_failure(timeout) is None


def test_huge_output_is_classified_from_its_head_and_tail() -> None:
    middle = "x" * 10_000_000
    assert classify_shell_failure(tool_result(RUN, "bash", middle + "\n" + TRACEBACK))
    assert classify_shell_failure(tool_result(RUN, "bash", NOT_FOUND + "\n" + middle))
    # beyond the scanned head and tail: not looked at (cost stays O(cap))
    buried = "y" * 100_000 + NOT_FOUND + "y" * 100_000
    assert classify_shell_failure(tool_result(RUN, "bash", buried)) is None


def test_mcp_prefixed_shell_tool_names_count() -> None:
    detector = ShellFailureDetector(LoopGuardConfig())
    events = [tool_result(RUN, "terminal__run_shell_command", NOT_FOUND)] * 2
    assert _kinds(detector, detector.new_state(), events) == [None, "shell_failure"]


def test_content_capture_adds_only_the_matching_line() -> None:
    detector = ShellFailureDetector(LoopGuardConfig(capture_content=True))
    state = detector.new_state()
    events = [tool_result(RUN, "bash", TRACEBACK)] * 2
    signal = [detector.observe(e, state, RunCounters()) for e in events][-1]
    assert signal is not None
    assert signal.evidence["line"] == "ModuleNotFoundError: No module named 'yaml'"


def test_threshold_from_config_and_repeats_at_multiples() -> None:
    detector = ShellFailureDetector(LoopGuardConfig(shell_failure_threshold=3))
    state = detector.new_state()
    kinds = _kinds(detector, state, [tool_result(RUN, "shell", NOT_FOUND)] * 6)
    assert kinds == [None, None, "shell_failure", None, None, "shell_failure"]


def test_custom_shell_tools() -> None:
    config = LoopGuardConfig.from_env({"OTEL_LOOPGUARD_SHELL_TOOLS": "sandbox_exec"})
    detector = ShellFailureDetector(config)
    events = [tool_result(RUN, "sandbox_exec", NOT_FOUND)] * 2
    assert _kinds(detector, detector.new_state(), events) == [None, "shell_failure"]
    events = [tool_result(RUN, "bash", NOT_FOUND)] * 2
    assert _kinds(detector, detector.new_state(), events) == [None, None]


def test_export_restore_mid_run() -> None:
    detector = ShellFailureDetector(LoopGuardConfig())
    state = detector.new_state()
    _kinds(detector, state, [tool_result(RUN, "bash", NOT_FOUND)])
    data = json.loads(json.dumps(detector.export_state(state)))
    restored = detector.restore_state(data)
    assert _kinds(detector, restored, [tool_result(RUN, "bash", NOT_FOUND)]) == ["shell_failure"]
    broken = detector.restore_state({"consecutive": -5, "failure_class": "bogus"})
    assert broken.consecutive == 0 and broken.failure_class == ""


def test_monitor_replans_with_the_hint() -> None:
    monitor = Monitor(LoopGuardConfig())
    events = [
        tool_call(RUN, "bash", {"command": "rg TODO"}),
        tool_result(RUN, "bash", NOT_FOUND),
        tool_call(RUN, "bash", {"command": "rg -n TODO"}),
        tool_result(RUN, "bash", NOT_FOUND),
    ]
    decisions = [monitor.observe(event) for event in events]
    assert [d.action for d in decisions[:3]] == [Action.CONTINUE] * 3
    assert decisions[3].action is Action.REPLAN
    assert decisions[3].recommendation and "command not found" in decisions[3].recommendation


def test_genai_shell_spans_failing_get_the_hint_as_a_span_event() -> None:
    """Real SDK spans in the GenAI semantic conventions, fed through the span processor."""
    stack = sdk_stack()
    with stack.tracer.start_as_current_span("invoke_agent writer", attributes=AGENT):
        tool_span(stack, "bash", json.dumps({"command": "python app.py"}), TRACEBACK)
        tool_span(stack, "bash", json.dumps({"command": "python3 app.py"}), TRACEBACK)
    stack.provider.shutdown()
    (decision,) = stack.decisions()
    assert decision["loopguard.action"] == "replan"
    assert "ModuleNotFoundError" in decision["loopguard.recommendation"]
    assert "yaml" not in json.dumps(decision)  # raw output stays out without content capture
