"""The real thing: an unmodified LlamaIndex agent program under ``opentelemetry-instrument``.

The entry point is found because llama-index-core is installed; spans are printed by the
SDK's console exporter and read back from the subprocess's stdout.
"""

from __future__ import annotations

from pathlib import Path

from otel_loopguard_testing import (
    assert_console_search_loop_observed,
    assert_console_search_loop_stopped,
    run_console_program,
)

PROGRAM = Path(__file__).parent / "programs" / "looping_agent.py"


def test_enforce_mode_stops_the_streamed_loop_under_opentelemetry_instrument():
    outcome, spans = run_console_program(
        PROGRAM, "--stream", extra_args=("--loopguard_mode", "enforce")
    )

    assert_console_search_loop_stopped(outcome, spans, "support_agent")


def test_observe_mode_under_opentelemetry_instrument_changes_nothing():
    outcome, spans = run_console_program(PROGRAM, env={"OTEL_LOOPGUARD_MODE": "observe"})

    assert_console_search_loop_observed(outcome, spans, executions=12)
    assert outcome["answer"] == "I could not find the price."
