"""The real ``opentelemetry-instrument`` loads the package through its entry point, next to
ADK's own GenAI spans on the same (global) tracer provider: ADK's ``execute_tool`` spans
nest in our gate spans and its ``generate_content`` spans report the model turns, each once."""

from __future__ import annotations

from pathlib import Path

from otel_loopguard_testing import program_checks as checks
from otel_loopguard_testing import run_suite_app
from scripted_models import CANDIDATE_TOKENS, PROMPT_TOKENS

TESTS = Path(__file__).parent


def ours(spans: list[dict], name: str) -> list[dict]:
    """Our spans called ``name``: ADK makes spans of the same names, which carry attributes
    ours never set (``gen_ai.tool.type`` on its tool spans, ``gen_ai.agent.description`` on
    its agent spans); the console exporter prints no instrumentation scope."""
    return checks.console_named(
        spans, name, without=("gen_ai.tool.type", "gen_ai.agent.description")
    )


def test_looping_agent_is_stopped_under_opentelemetry_instrument():
    outcome, spans = run_suite_app(TESTS, "agent", mode="enforce")

    # three executions: ADK's own execute_tool spans are not counted again
    agent, _ = checks.assert_console_loop_stopped(outcome, spans, "researcher", pick=ours)
    # ADK's generate_content spans report the turns and ours stay quiet: each counted once
    checks.assert_console_usage(agent, outcome["model_calls"], PROMPT_TOKENS, CANDIDATE_TOKENS)


def test_a_streamed_answer_counts_once_under_opentelemetry_instrument():
    """ADK's ``generate_content`` span of a streamed answer ends in the context ADK copied at
    the answer's first chunk: the turn counts once, not once more by us."""
    outcome, spans = run_suite_app(TESTS, "streamed", mode="enforce")

    checks.assert_console_streamed_run_completed(
        outcome, spans, "researcher", PROMPT_TOKENS, CANDIDATE_TOKENS, pick=ours
    )


def test_ping_pong_is_stopped_under_opentelemetry_instrument():
    outcome, spans = run_suite_app(TESTS, "ping_pong", mode="enforce")

    checks.assert_console_handoff_cycle_stopped(outcome, spans, "coordinator", pick=ours)


def test_observe_mode_under_opentelemetry_instrument_changes_nothing():
    outcome, spans = run_suite_app(TESTS, "agent", mode="observe")

    assert outcome["adk_limit"] is True  # ADK's own max_llm_calls ended it
    checks.assert_console_loop_observed(outcome, spans, executions=8)
