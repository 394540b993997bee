"""The user's path: ``opentelemetry-instrument --loopguard_mode enforce python agent.py``.

A real client process under ``opentelemetry-instrument`` (this package found through its
``opentelemetry_instrumentor`` entry point) drives a real MCP server process over stdio;
spans go over OTLP/HTTP to a receiver on a loopback port.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from otel_loopguard_testing import (
    assert_interrupted_process,
    received_decisions,
    run_script_with_receiver,
)

TESTS = Path(__file__).resolve().parent

AGENT_SCRIPT = textwrap.dedent(
    """
    import os
    import sys

    import anyio
    from mcp import Client, StdioServerParameters
    from scripted_agent import LOOPING_PLAN, run_agent

    from kb_server import build_server

    log = os.environ["KB_EXECUTIONS_FILE"]
    if "--in-process" in sys.argv:  # the server's own spans join the same pipeline
        server = build_server()
    else:
        server = StdioServerParameters(
            command=sys.executable,
            args=[os.path.join(os.environ["TESTS"], "kb_server.py")],
            env={"KB_EXECUTIONS_FILE": log},
        )


    async def main():
        async with Client(server) as client:
            try:
                print("ANSWER", await run_agent(client, LOOPING_PLAN, None))
            finally:
                with open(log, encoding="utf-8") as handle:
                    print("EXECUTIONS", len(handle.read().splitlines()), flush=True)


    anyio.run(main)
    """
)


@pytest.mark.parametrize("transport", ["stdio", "in-process"])
def test_enforce_mode_interrupts_the_run_in_a_real_process(tmp_path, transport):
    log = tmp_path / "executions.txt"
    log.touch()
    completed, spans = run_script_with_receiver(
        tmp_path,
        AGENT_SCRIPT,
        extra_args=("--loopguard_mode", "enforce"),
        script_args=("--in-process",) if transport == "in-process" else (),
        env={"PYTHONPATH": str(TESTS), "TESTS": str(TESTS), "KB_EXECUTIONS_FILE": str(log)},
    )

    executions = assert_interrupted_process(completed)
    assert "ANSWER" not in completed.stdout
    tool_spans = [s for s in spans if s.name == "execute_tool search"]
    assert len(tool_spans) == executions
    (agent_span,) = [s for s in spans if s.name == "invoke_agent researcher"]
    assert agent_span.attributes["loopguard.run.state"] == "stopped"
    assert received_decisions(spans, "stop")
    if transport == "stdio":
        # the SDK's own client span of each request is kept, inside our tool span
        sends = [s for s in spans if s.name == "MCP send tools/call search"]
        assert len(sends) == executions
        assert {s.parent_span_id for s in sends} == {s.span_id for s in tool_spans}
    else:
        # the in-process server's spans are exported too, and not counted as calls
        assert len([s for s in spans if s.name == "tools/call search"]) == executions
