"""The real ``opentelemetry-instrument`` loads the package through its entry point, next to
ADK's own GenAI spans on the same (global) tracer provider: ADK's ``execute_tool`` spans
nest in our gate spans and its ``generate_content`` spans report the model turns, each once."""

from __future__ import annotations

from pathlib import Path

from otel_loopguard_testing import console_decisions, run_suite_app
from scripted_models import CANDIDATE_TOKENS, PROMPT_TOKENS

TESTS = Path(__file__).parent


def run_instrumented(scenario: str, mode: str) -> tuple[dict, list[dict]]:
    return run_suite_app(TESTS, scenario, mode=mode)


def ours(spans: list[dict], name: str) -> list[dict]:
    """Our spans called ``name``: ADK makes spans of the same names, which carry attributes
    ours never set (``gen_ai.tool.type`` on its tool spans, ``gen_ai.agent.description`` on
    its agent spans); the console exporter prints no instrumentation scope."""
    adk_only = {"gen_ai.tool.type", "gen_ai.agent.description"}
    return [s for s in spans if s["name"] == name and adk_only.isdisjoint(s["attributes"])]


def test_looping_agent_is_stopped_under_opentelemetry_instrument():
    outcome, spans = run_instrumented("agent", "enforce")

    assert outcome["interrupted"] is True
    assert "repetition" in outcome["detectors"]
    assert outcome["executions"] == 3  # ADK's own execute_tool spans are not counted again
    (agent,) = ours(spans, "invoke_agent researcher")
    assert agent["attributes"]["loopguard.run.state"] == "stopped"
    # ADK's generate_content spans report the turns and ours stay quiet: each counted once
    calls = outcome["model_calls"]
    assert agent["attributes"]["gen_ai.usage.input_tokens"] == calls * PROMPT_TOKENS
    assert agent["attributes"]["gen_ai.usage.output_tokens"] == calls * CANDIDATE_TOKENS
    tools = ours(spans, "execute_tool search")
    assert len(tools) == 3
    assert {s["context"]["trace_id"] for s in tools} == {agent["context"]["trace_id"]}
    assert any(console_decisions(s, "stop") for s in tools)


def test_a_streamed_answer_counts_once_under_opentelemetry_instrument():
    """ADK's ``generate_content`` span of a streamed answer ends in the context ADK copied at
    the answer's first chunk: the turn counts once, not once more by us."""
    outcome, spans = run_instrumented("streamed", "enforce")

    assert outcome == {"interrupted": False, "executions": 3, "model_calls": 4}
    (agent,) = ours(spans, "invoke_agent researcher")
    assert agent["attributes"]["loopguard.run.state"] == "completed"
    assert agent["attributes"]["gen_ai.usage.input_tokens"] == 4 * PROMPT_TOKENS
    assert agent["attributes"]["gen_ai.usage.output_tokens"] == 4 * CANDIDATE_TOKENS


def test_ping_pong_is_stopped_under_opentelemetry_instrument():
    outcome, spans = run_instrumented("ping_pong", "enforce")

    assert outcome["interrupted"] is True
    assert outcome["detectors"] == ["handoff_cycle"]
    (run,) = ours(spans, "invoke_agent coordinator")
    assert run["attributes"]["loopguard.run.state"] == "stopped"


def test_observe_mode_under_opentelemetry_instrument_changes_nothing():
    outcome, spans = run_instrumented("agent", "observe")

    assert outcome["interrupted"] is False
    assert outcome["adk_limit"] is True  # ADK's own max_llm_calls ended it
    assert outcome["executions"] == 8
    actions = [
        e["attributes"]["loopguard.action"]
        for s in spans
        for e in s["events"]
        if e["name"] == "loopguard.decision"
    ]
    assert "stop" in actions  # recorded, not enforced
