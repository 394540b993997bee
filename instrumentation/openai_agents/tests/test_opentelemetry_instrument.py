"""The user's path: ``opentelemetry-instrument --loopguard_mode enforce python agent.py``.

A real subprocess; this package is found through its ``opentelemetry_instrumentor`` entry
point, spans go over OTLP/HTTP to a receiver on a loopback port.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from otel_loopguard_testing import (
    ReceivedSpan,
    assert_interrupted_process,
    printed_count,
    received_decisions,
    run_script_with_receiver,
)

TESTS = Path(__file__).resolve().parent

AGENT_SCRIPT = textwrap.dedent(
    """
    import asyncio

    from agents import Runner
    from scripted_agents import looping_agent

    scenario = looping_agent()
    try:
        result = asyncio.run(Runner.run(scenario.agent, "What does it cost?"))
        print("FINAL", result.final_output)
    finally:
        print("EXECUTIONS", len(scenario.executions), flush=True)
    """
)


def _run(tmp_path: Path, mode: str) -> tuple[Any, list[ReceivedSpan]]:
    return run_script_with_receiver(
        tmp_path,
        AGENT_SCRIPT,
        extra_args=("--loopguard_mode", mode),
        env={"PYTHONPATH": str(TESTS), "OPENAI_AGENTS_DISABLE_TRACING": "1"},
    )


def test_enforce_mode_interrupts_the_run_in_a_real_process(tmp_path):
    completed, spans = _run(tmp_path, "enforce")

    executions = assert_interrupted_process(completed)
    tool_spans = [s for s in spans if s.name == "execute_tool search"]
    executed = [s for s in tool_spans if s.attributes.get("error.type") != "LoopGuardInterrupt"]
    assert len(executed) == executions
    assert all(s.attributes["gen_ai.operation.name"] == "execute_tool" for s in tool_spans)
    (agent_span,) = [s for s in spans if s.name == "invoke_agent researcher"]
    assert agent_span.attributes["loopguard.run.state"] == "stopped"
    assert received_decisions(spans, "stop")


def test_observe_mode_changes_nothing_in_a_real_process(tmp_path):
    completed, spans = _run(tmp_path, "observe")

    assert completed.returncode == 0, completed.stderr[-2000:]
    assert "FINAL I could not find anything." in completed.stdout
    executions = printed_count(completed.stdout, "EXECUTIONS")
    assert executions == len([s for s in spans if s.name == "execute_tool search"]) == 8
    assert received_decisions(spans, "stop")
