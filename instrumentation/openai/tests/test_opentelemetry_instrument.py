"""The real ``opentelemetry-instrument`` loads the package through its entry point."""

from __future__ import annotations

from pathlib import Path

from otel_loopguard_testing import assert_console_budget_stopped, run_suite_app

TESTS = Path(__file__).parent


def test_budget_enforced_under_opentelemetry_instrument():
    env = {"OTEL_SERVICE_NAME": "budget-agent", "OTEL_LOOPGUARD_TOKEN_BUDGET": "45"}
    outcome, spans = run_suite_app(TESTS, mode="enforce", app="budget_agent.py", env=env)
    assert_console_budget_stopped(outcome, spans)
