"""The user's path: ``opentelemetry-instrument --loopguard_mode enforce python agent.py``.

A real subprocess; this package is found through its ``opentelemetry_instrumentor`` entry
point, spans go over OTLP/HTTP to a receiver on a loopback port. Run once with
pydantic-ai's own instrumentation off (our spans) and once on (``Agent.instrument_all()``:
pydantic-ai's spans, our enforcement).
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
    import sys

    from pydantic_ai import Agent
    from scripted_agents import looping_agent

    if "--pydantic-ai-spans" in sys.argv:
        Agent.instrument_all()
    scenario = looping_agent()
    try:
        print("FINAL", scenario.agent.run_sync("What does it cost?").output)
    finally:
        print("EXECUTIONS", len(scenario.executions), flush=True)
    """
)


@pytest.mark.parametrize("own_spans", [False, True], ids=["our-spans", "pydantic-ai-spans"])
def test_enforce_mode_interrupts_the_run_in_a_real_process(tmp_path, own_spans):
    completed, spans = run_script_with_receiver(
        tmp_path,
        AGENT_SCRIPT,
        extra_args=("--loopguard_mode", "enforce"),
        script_args=("--pydantic-ai-spans",) if own_spans else (),
        env={"PYTHONPATH": str(TESTS)},
    )

    executions = assert_interrupted_process(completed)
    tool_spans = [s for s in spans if s.name == "execute_tool search"]
    executed = [s for s in tool_spans if s.attributes.get("error.type") != "LoopGuardInterrupt"]
    assert len(executed) == executions  # one span per execution, never two
    agent_spans = [s for s in spans if s.name == "invoke_agent researcher"]
    assert len(agent_spans) == 1
    assert received_decisions(spans, "stop")
    made_by = {span.scope for span in [*tool_spans, *agent_spans]}
    if own_spans:
        assert made_by == {"pydantic-ai"}
    else:
        assert made_by == {"otel_loopguard_pydantic_ai"}
        assert agent_spans[0].attributes["loopguard.run.state"] == "stopped"


BUDGET_SCRIPT = textwrap.dedent(
    """
    from scripted_agents import productive_agent

    scenario = productive_agent(usage=(40, 10))
    try:
        print("FINAL", scenario.agent.run_sync("What does it cost?").output)
    finally:
        print("MODEL_CALLS", len(scenario.model_calls), flush=True)
    """
)


def test_a_token_budget_stops_the_run_in_a_real_process(tmp_path):
    """``--loopguard_token_budget``: the model turns of a run without pydantic-ai's own
    instrumentation count, and the turn that goes over ends the run before its tools run."""
    completed, spans = run_script_with_receiver(
        tmp_path,
        BUDGET_SCRIPT,
        extra_args=("--loopguard_mode", "enforce", "--loopguard_token_budget", "120"),
        env={"PYTHONPATH": str(TESTS)},
    )

    model_calls = assert_interrupted_process(completed, "MODEL_CALLS")
    assert model_calls == 3  # 150 tokens after the third
    (run,) = [s for s in spans if s.name == "invoke_agent researcher"]
    assert run.attributes["loopguard.run.state"] == "budget_exceeded"
    assert run.attributes["gen_ai.usage.input_tokens"] == 3 * 40
    assert run.attributes["gen_ai.usage.output_tokens"] == 3 * 10


README = TESTS.parent / "README.md"

#: runs one statement of the README's ``python`` block (its imports, then the statement
#: named on the command line) on a looping agent, under ``opentelemetry-instrument``
README_SNIPPET_SCRIPT = textwrap.dedent(
    """
    import sys

    from scripted_agents import looping_agent

    imports, statements = sys.argv[1].split("\\n\\n", 1)
    statement = statements.splitlines()[int(sys.argv[2])]
    scenario = looping_agent()
    namespace = {"agent": scenario.agent}
    exec(imports + "\\n" + statement, namespace)
    try:
        print("FINAL", scenario.agent.run_sync("What does it cost?").output)
    finally:
        print("EXECUTIONS", len(scenario.executions), flush=True)
    """
)


def _readme_python_block() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("```python\n") + len("```python\n")
    return text[start : text.index("```", start)].strip()


def test_the_readme_never_shows_the_agent_keyword_that_raises() -> None:
    """``Agent(..., instrument=True)`` raises TypeError on pydantic-ai 2.68 (issue 17, 7)."""
    from pydantic_ai import Agent

    with pytest.raises(TypeError):
        Agent("test", instrument=True)
    assert "Agent(instrument=True)" not in README.read_text(encoding="utf-8")


@pytest.mark.parametrize("statement", [0, 1], ids=["instrument_all", "agent.instrument"])
def test_the_readme_snippet_turns_on_pydantic_ais_spans_and_we_still_stop(tmp_path, statement):
    """Each way the README shows to turn pydantic-ai's own instrumentation on works as
    written: pydantic-ai makes the spans, and the looping run is still interrupted."""
    block = _readme_python_block()
    assert len(block.split("\n\n", 1)[1].splitlines()) == 2
    completed, spans = run_script_with_receiver(
        tmp_path,
        README_SNIPPET_SCRIPT,
        extra_args=("--loopguard_mode", "enforce"),
        script_args=(block, str(statement)),
        env={"PYTHONPATH": str(TESTS)},
    )

    executions = assert_interrupted_process(completed)
    assert executions <= 4
    agent_spans = [s for s in spans if s.name == "invoke_agent researcher"]
    assert [s.scope for s in agent_spans] == ["pydantic-ai"]
    assert received_decisions(spans, "stop")
