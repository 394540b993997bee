"""The real ``opentelemetry-instrument`` loads the package through its entry point, next to
Strands' own GenAI spans on the same (global) tracer provider: Strands' ``execute_tool``
spans nest in our gate spans and its ``chat`` spans report the model turns, each once."""

from __future__ import annotations

from pathlib import Path

from otel_loopguard_testing import program_checks as checks
from otel_loopguard_testing import run_suite_app
from scripted_models import INPUT_TOKENS, OUTPUT_TOKENS

TESTS = Path(__file__).parent


def ours(spans: list[dict], name: str) -> list[dict]:
    """Our spans called ``name``: Strands makes spans of the same names, which carry the
    ``gen_ai.event.start_time`` attribute ours never set; the console exporter prints no
    instrumentation scope."""
    return checks.console_named(spans, name, without=("gen_ai.event.start_time",))


def test_looping_agent_is_stopped_under_opentelemetry_instrument():
    outcome, spans = run_suite_app(TESTS, "agent", mode="enforce")

    # three executions: Strands' own execute_tool spans are not counted again
    agent, tools = checks.assert_console_loop_stopped(outcome, spans, "researcher", pick=ours)
    # Strands' chat spans report the turns and ours stay quiet: each counted once
    calls = outcome["model_calls"]
    assert len(checks.console_named(spans, "chat")) == calls
    checks.assert_console_usage(agent, calls, INPUT_TOKENS, OUTPUT_TOKENS)
    strands_tools = [s for s in spans if s["name"] == "execute_tool search" and s not in tools]
    assert {s["parent_id"] for s in strands_tools} == {s["context"]["span_id"] for s in tools}
    # Strands' cycle span the interrupt left is ended too (exported)
    cycles = [s for s in spans if s["name"] == "execute_event_loop_cycle"]
    assert len(cycles) == calls


def test_a_streamed_invocation_counts_each_turn_once_under_opentelemetry_instrument():
    outcome, spans = run_suite_app(TESTS, "streamed", mode="enforce")

    checks.assert_console_streamed_run_completed(
        outcome, spans, "researcher", INPUT_TOKENS, OUTPUT_TOKENS, pick=ours
    )


def test_swarm_ping_pong_is_stopped_under_opentelemetry_instrument():
    outcome, spans = run_suite_app(TESTS, "swarm", mode="enforce")

    checks.assert_console_handoff_cycle_stopped(outcome, spans, "desk", pick=ours)


def test_observe_mode_under_opentelemetry_instrument_changes_nothing():
    outcome, spans = run_suite_app(TESTS, "agent", mode="observe")

    checks.assert_console_loop_observed(outcome, spans, executions=7)  # the model gave up
