"""The real thing: an unmodified LangGraph program under ``opentelemetry-instrument``.

The entry point is found because langchain-core is installed; spans are printed by the
SDK's console exporter and read back from the subprocess's stdout.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from otel_loopguard_testing import (
    assert_console_search_loop_observed,
    assert_console_search_loop_stopped,
    program_outcome,
    run_console_program,
    run_under_opentelemetry_instrument,
)

PROGRAM = Path(__file__).parent / "programs" / "looping_graph.py"


@pytest.mark.parametrize(
    ("flags", "env", "program_args"),
    [
        ((), {"OTEL_LOOPGUARD_MODE": "enforce"}, ()),
        (("--loopguard_mode", "enforce"), {}, ("--stream",)),
    ],
    ids=["env-invoke", "flag-stream"],
)
def test_enforce_mode_stops_the_loop_under_opentelemetry_instrument(flags, env, program_args):
    outcome, spans = run_console_program(PROGRAM, *program_args, extra_args=flags, env=env)

    assert_console_search_loop_stopped(outcome, spans, "support_agent")


def test_observe_mode_under_opentelemetry_instrument_changes_nothing():
    outcome, spans = run_console_program(PROGRAM, env={"OTEL_LOOPGUARD_MODE": "observe"})

    assert_console_search_loop_observed(outcome, spans, executions=12)
    assert outcome["answer"] == "I could not find the price."


def test_disabling_loopguard_turns_the_framework_package_off_too():
    """``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS=loopguard``: nothing of otel-loopguard acts,
    the package included; ``loopguard_langchain`` turns off only the package."""
    env = {"OTEL_LOOPGUARD_MODE": "enforce", "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "loopguard"}
    outcome, spans = run_console_program(PROGRAM, env=env)
    assert not outcome["interrupted"] and outcome["executions"] == 12
    assert not any(
        event["name"] == "loopguard.decision" for span in spans for event in span["events"]
    )

    env["OTEL_PYTHON_DISABLED_INSTRUMENTATIONS"] = "loopguard_langchain"
    outcome, spans = run_console_program(PROGRAM, env=env)
    assert not outcome["interrupted"] and outcome["executions"] == 12
    assert not any(span["name"].startswith("execute_tool") for span in spans)


def test_an_interrupted_graph_says_why_in_one_warning_line():
    """The LangGraph user sees a long traceback; before it, one line says what stopped the
    run and why."""
    completed = run_under_opentelemetry_instrument(PROGRAM, env={"OTEL_LOOPGUARD_MODE": "enforce"})
    outcome = program_outcome(completed)
    assert outcome["interrupted"]
    lines = [line for line in completed.stderr.splitlines() if "STOP interrupted run" in line]
    assert len(lines) == 1, completed.stderr[-3000:]
    assert "tool search" in lines[0] and "agent support_agent" in lines[0]
    assert "saved: " in lines[0]
