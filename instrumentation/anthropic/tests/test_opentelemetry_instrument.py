"""The real thing: an unmodified Claude agent program under ``opentelemetry-instrument``.

The entry point is found because ``anthropic`` is installed; the SDK makes its own chat
spans with the provider auto-instrumentation configured, and we add no second one.
"""

from __future__ import annotations

from pathlib import Path

from otel_loopguard_testing import console_decisions, run_console_program

PROGRAM = Path(__file__).parent / "programs" / "claude_agent.py"


def test_enforce_mode_stops_the_streamed_loop_under_opentelemetry_instrument():
    outcome, spans = run_console_program(
        PROGRAM, "--stream", extra_args=("--loopguard_mode", "enforce")
    )

    assert outcome["interrupted"] is True
    assert 1 <= outcome["executions"] <= 4
    chats = [s for s in spans if s["attributes"].get("gen_ai.operation.name") == "chat"]
    assert len(chats) == outcome["requests"]
    assert {s["name"] for s in chats} == {"anthropic.messages.create"}
    tools = [s for s in spans if s["name"] == "execute_tool search"]
    assert any(console_decisions(s, "stop") for s in tools)
    (agent,) = [s for s in spans if s["name"] == "invoke_agent claude_agent"]
    assert agent["attributes"]["loopguard.run.state"] == "stopped"
    usage = sum(s["attributes"]["gen_ai.usage.input_tokens"] for s in chats)
    assert agent["attributes"]["gen_ai.usage.input_tokens"] == usage


def test_token_budget_flag_stops_before_the_request_is_sent():
    outcome, spans = run_console_program(
        PROGRAM,
        "--script",
        "productive",
        extra_args=("--loopguard_mode", "enforce", "--loopguard_token_budget", "300"),
    )

    assert outcome["interrupted"] is True
    assert outcome["requests"] == 2, "the third request never left the process"
    (agent,) = [s for s in spans if s["name"] == "invoke_agent claude_agent"]
    assert agent["attributes"]["loopguard.run.state"] == "budget_exceeded"
