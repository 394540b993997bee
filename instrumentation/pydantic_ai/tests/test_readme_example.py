"""The README's example (README.md, pydantic-ai's own instrumentation on) runs as written
in a real ``opentelemetry-instrument --loopguard_mode enforce`` process, and what the README
says of it holds: pydantic-ai makes the spans, we make none, and the loop is still stopped.
The block is read from the README, so the two cannot drift apart
(tests/test_doc_examples.py checks the README points here)."""

from __future__ import annotations

import re
from pathlib import Path

from otel_loopguard_testing import (
    assert_interrupted_process,
    received_decisions,
    run_script_with_receiver,
)

TESTS = Path(__file__).resolve().parent
README = TESTS.parent / "README.md"


def _example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    (block,) = [b for b in blocks if "instrument_all()" in b]
    return block


def test_the_readme_settings_leave_the_loop_stopped(tmp_path) -> None:
    script = "\n".join(
        (
            "from scripted_agents import looping_agent",
            "scenario = looping_agent()",
            "agent = scenario.agent",
            _example(),
            "try:",
            "    print('FINAL', agent.run_sync('What does it cost?').output)",
            "finally:",
            "    print('EXECUTIONS', len(scenario.executions), flush=True)",
        )
    )
    completed, spans = run_script_with_receiver(
        tmp_path,
        script,
        extra_args=("--loopguard_mode", "enforce"),
        env={"PYTHONPATH": str(TESTS)},
    )

    assert_interrupted_process(completed)
    assert received_decisions(spans, "stop")
    tool_spans = [s for s in spans if s.name == "execute_tool search"]
    assert tool_spans and {s.scope for s in tool_spans} == {"pydantic-ai"}
