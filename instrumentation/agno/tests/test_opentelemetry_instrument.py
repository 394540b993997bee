"""The real ``opentelemetry-instrument`` loads the package through its entry point and
stops a looping Agno agent; observe mode changes nothing. The suite's venv also holds
OpenInference's Agno instrumentation (Agno's own tracing), entry point ``agno`` beside
our ``loopguard_agno``: both are loaded, and both key the run by the agent's session."""

from __future__ import annotations

from pathlib import Path

from otel_loopguard_testing import program_checks as checks
from otel_loopguard_testing import run_suite_app
from scripted_models import COMPLETION_TOKENS, PROMPT_TOKENS

TESTS = Path(__file__).parent


def test_looping_agent_is_stopped_under_opentelemetry_instrument():
    outcome, spans = run_suite_app(TESTS, "agent", mode="enforce")

    run, _ = checks.assert_console_loop_stopped(outcome, spans, "researcher")
    assert outcome["model_calls"] == 3
    checks.assert_console_usage(run, 3, PROMPT_TOKENS, COMPLETION_TOKENS)
    (theirs,) = checks.console_named(spans, "researcher.run")  # OpenInference's agent span
    assert theirs["attributes"]["session.id"] == run["attributes"]["loopguard.run.id"]


def test_a_streamed_run_completes_under_opentelemetry_instrument():
    outcome, spans = run_suite_app(TESTS, "streamed", mode="enforce")

    checks.assert_console_streamed_run_completed(
        outcome, spans, "researcher", PROMPT_TOKENS, COMPLETION_TOKENS
    )


def test_observe_mode_under_opentelemetry_instrument_changes_nothing():
    outcome, spans = run_suite_app(TESTS, "agent", mode="observe")

    assert outcome == {
        "interrupted": False,
        "answer": "gave up",
        "executions": 8,
        "model_calls": 9,
    }
    assert "stop" in checks.console_actions(spans)  # recorded, not enforced
