"""The real ``opentelemetry-instrument`` loads the package through its entry point, next to
autogen-core's own GenAI spans on the same (global) tracer provider."""

from __future__ import annotations

from pathlib import Path

from otel_loopguard_testing import program_checks as checks
from otel_loopguard_testing import run_suite_app

TESTS = Path(__file__).parent


def ours(spans: list[dict], name: str) -> list[dict]:
    """Our spans called ``name``; autogen-core makes spans of the same names, marked
    ``gen_ai.system = autogen`` (the console exporter prints no instrumentation scope)."""
    return [
        s for s in spans if s["name"] == name and s["attributes"].get("gen_ai.system") != "autogen"
    ]


def test_looping_agent_is_stopped_under_opentelemetry_instrument():
    outcome, spans = run_suite_app(TESTS, "agent", mode="enforce")

    # three tool spans: autogen's own execute_tool spans inside them are not counted again;
    # under autogen's own invoke_agent span, which is under ours: one trace, one run
    checks.assert_console_loop_stopped(outcome, spans, "researcher", pick=ours)


def test_swarm_ping_pong_is_stopped_under_opentelemetry_instrument():
    outcome, spans = run_suite_app(TESTS, "swarm", mode="enforce")

    checks.assert_console_handoff_cycle_stopped(outcome, spans, "Swarm", pick=ours)


def test_observe_mode_under_opentelemetry_instrument_changes_nothing():
    outcome, spans = run_suite_app(TESTS, "agent", mode="observe")

    # autogen's own max_tool_iterations ended it
    checks.assert_console_loop_observed(outcome, spans, executions=10)
