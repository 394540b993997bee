"""The real ``opentelemetry-instrument`` loads the package through its entry point."""

from __future__ import annotations

from pathlib import Path

from otel_loopguard_testing import run_console_program

TESTS = Path(__file__).parent


def test_budget_enforced_under_opentelemetry_instrument():
    env = {
        "PYTHONPATH": str(TESTS),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "OTEL_LOOPGUARD_MODE": "enforce",
        "OTEL_LOOPGUARD_TOKEN_BUDGET": "45",
    }
    outcome, spans = run_console_program(TESTS / "apps" / "budget_agent.py", env=env)
    assert outcome == {"interrupted": True, "detectors": ["budget"], "requests": 2}
    chats = [span for span in spans if span["name"] == "chat gpt-test"]
    assert len(chats) == 3  # two answered, the third vetoed before it was sent
    assert chats[0]["attributes"]["gen_ai.provider.name"] == "openai"
    assert chats[-1]["attributes"]["error.type"] == "LoopGuardInterrupt"
    agent = next(span for span in spans if span["name"] == "invoke_agent assistant")
    assert agent["attributes"]["loopguard.run.state"] == "budget_exceeded"
