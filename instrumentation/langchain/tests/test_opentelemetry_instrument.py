"""The real thing: an unmodified LangGraph program under ``opentelemetry-instrument``.

The entry point is found because langchain-core is installed; spans are printed by the
SDK's console exporter and read back from the subprocess's stdout.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from otel_loopguard_testing import console_decisions, run_console_program

PROGRAM = Path(__file__).parent / "programs" / "looping_graph.py"


@pytest.mark.parametrize(
    ("flags", "env", "program_args"),
    [
        ((), {"OTEL_LOOPGUARD_MODE": "enforce"}, ()),
        (("--loopguard_mode", "enforce"), {}, ("--stream",)),
    ],
    ids=["env-invoke", "flag-stream"],
)
def test_enforce_mode_stops_the_loop_under_opentelemetry_instrument(flags, env, program_args):
    outcome, spans = run_console_program(PROGRAM, *program_args, extra_args=flags, env=env)

    assert outcome["interrupted"] is True
    assert outcome["action"] == "stop"
    assert 1 <= outcome["executions"] <= 4
    tools = [s for s in spans if s["name"] == "execute_tool search"]
    ran = [s for s in tools if s["attributes"].get("error.type") != "LoopGuardInterrupt"]
    assert len(ran) == outcome["executions"]
    assert any(console_decisions(s, "stop") for s in tools)
    (agent,) = [s for s in spans if s["name"] == "invoke_agent support_agent"]
    assert agent["attributes"]["loopguard.run.state"] == "stopped"
    assert all(s["context"]["trace_id"] == agent["context"]["trace_id"] for s in tools)


def test_observe_mode_under_opentelemetry_instrument_changes_nothing():
    outcome, spans = run_console_program(PROGRAM, env={"OTEL_LOOPGUARD_MODE": "observe"})

    assert outcome["interrupted"] is False
    assert outcome["executions"] == 12
    assert outcome["answer"] == "I could not find the price."
    tools = [s for s in spans if s["name"] == "execute_tool search"]
    assert len(tools) == 12
    assert any(console_decisions(s, "stop") for s in tools)
