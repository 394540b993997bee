"""The real ``opentelemetry-instrument`` loads the package through its entry point and
stops a looping Agno agent; observe mode changes nothing. The suite's venv also holds
OpenInference's Agno instrumentation (Agno's own tracing), whose entry point has the same
name, ``agno``: both are loaded, and both key the run by the agent's session."""

from __future__ import annotations

from pathlib import Path

from otel_loopguard_testing import console_decisions, run_suite_app
from scripted_models import COMPLETION_TOKENS, PROMPT_TOKENS

TESTS = Path(__file__).parent


def named(spans: list[dict], name: str) -> list[dict]:
    return [s for s in spans if s["name"] == name]


def test_looping_agent_is_stopped_under_opentelemetry_instrument():
    outcome, spans = run_suite_app(TESTS, "agent", mode="enforce")

    assert outcome["interrupted"] is True
    assert "repetition" in outcome["detectors"]
    assert (outcome["executions"], outcome["model_calls"]) == (3, 3)
    (run,) = named(spans, "invoke_agent researcher")
    assert run["attributes"]["loopguard.run.state"] == "stopped"
    assert run["attributes"]["gen_ai.usage.input_tokens"] == 3 * PROMPT_TOKENS
    assert run["attributes"]["gen_ai.usage.output_tokens"] == 3 * COMPLETION_TOKENS
    (theirs,) = named(spans, "researcher.run")  # OpenInference's agent span
    assert theirs["attributes"]["session.id"] == run["attributes"]["loopguard.run.id"]
    tools = named(spans, "execute_tool search")
    assert len(tools) == 3
    assert {s["context"]["trace_id"] for s in tools} == {run["context"]["trace_id"]}
    assert any(console_decisions(s, "stop") for s in tools)


def test_a_streamed_run_completes_under_opentelemetry_instrument():
    outcome, spans = run_suite_app(TESTS, "streamed", mode="enforce")

    assert outcome == {"interrupted": False, "executions": 3, "model_calls": 4}
    (run,) = named(spans, "invoke_agent researcher")
    assert run["attributes"]["loopguard.run.state"] == "completed"
    assert run["attributes"]["gen_ai.usage.input_tokens"] == 4 * PROMPT_TOKENS


def test_observe_mode_under_opentelemetry_instrument_changes_nothing():
    outcome, spans = run_suite_app(TESTS, "agent", mode="observe")

    assert outcome == {
        "interrupted": False,
        "answer": "gave up",
        "executions": 8,
        "model_calls": 9,
    }
    actions = [
        e["attributes"]["loopguard.action"]
        for s in spans
        for e in s["events"]
        if e["name"] == "loopguard.decision"
    ]
    assert "stop" in actions  # recorded, not enforced
