"""An MCP client talking to a real MCP server in another process, over stdio."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from scripted_agent import LOOPING_PLAN, PRODUCTIVE_PLAN, run_to_the_end

from otel_loopguard import LoopGuardInterrupt

SERVER = Path(__file__).resolve().parent / "kb_server.py"


def _run_against_subprocess(plan, harness, log: Path) -> str | LoopGuardInterrupt:
    params = StdioServerParameters(
        command=sys.executable, args=[str(SERVER)], env={"KB_EXECUTIONS_FILE": str(log)}
    )
    return run_to_the_end(params, plan, harness.provider.get_tracer("test-agent"))


def _executions(log: Path) -> list[str]:
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def test_looping_run_against_a_server_process_is_interrupted(loopguard, tmp_path):
    log = tmp_path / "executions.txt"

    outcome = _run_against_subprocess(LOOPING_PLAN, loopguard, log)

    assert isinstance(outcome, LoopGuardInterrupt)
    executions = _executions(log)
    assert 1 <= len(executions) <= 4
    assert len(loopguard.executed_tool_spans("search")) == len(executions)
    loopguard.assert_every_span_ended_once()


def test_productive_run_against_a_server_process_completes(loopguard, tmp_path):
    log = tmp_path / "executions.txt"

    outcome = _run_against_subprocess(PRODUCTIVE_PLAN, loopguard, log)

    assert outcome == "answer: all prices in EUR"
    assert len(_executions(log)) == len(PRODUCTIVE_PLAN)
    assert len(loopguard.tool_spans("search")) == len(PRODUCTIVE_PLAN)
    assert loopguard.decision_events("stop") == []


def test_a_vetoed_call_never_reaches_the_server(loopguard, tmp_path):
    """After STOP, a caller that swallows the interrupt and calls again is vetoed."""
    plan = LOOPING_PLAN
    log = tmp_path / "executions.txt"
    tracer = loopguard.provider.get_tracer("test-agent")
    params = StdioServerParameters(
        command=sys.executable, args=[str(SERVER)], env={"KB_EXECUTIONS_FILE": str(log)}
    )
    from otel_loopguard.guard import get_guard

    async def main() -> int:
        interrupts = 0
        async with Client(params) as client:
            with get_guard().agent_run(tracer, "stubborn"):
                for name, arguments in plan:
                    try:
                        await client.call_tool(name, arguments)
                    except LoopGuardInterrupt:
                        interrupts += 1
        return interrupts

    interrupts = anyio.run(main)

    executions = _executions(log)
    assert 1 <= len(executions) <= 4
    # one interrupt right after the call that produced STOP, then one veto per later call
    vetoes = len(plan) - len(executions)
    assert interrupts == vetoes + 1
    vetoed_spans = [
        span
        for span in loopguard.tool_spans("search")
        if span.attributes.get("error.type") == "LoopGuardInterrupt"
    ]
    assert len(vetoed_spans) == vetoes
    loopguard.assert_every_span_ended_once()
