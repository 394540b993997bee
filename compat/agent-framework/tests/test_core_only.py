"""Our core alone beside Agent Framework's own spans (``invoke_agent``, ``chat``,
``execute_tool``, GenAI conventions): a looping agent is stopped within the fourth call
(observe mode), a productive one is left alone with content recorded or not, with its real
steps and tool calls, and two invocations under one application span are two runs."""

from __future__ import annotations

import asyncio

from agent_framework import Agent, tool
from agent_framework.openai import OpenAIChatCompletionClient
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.compat_checks import executions_at_first_stop
from otel_loopguard_testing.scripted_openai import Turn, usage_turns

LOOP_TURNS = 6
#: the productive run: three searches, then its answer
USAGE = [(11, 3), (17, 4), (25, 6), (30, 8)]


def looping_turns() -> list[Turn]:
    """The same search on every turn, then the model gives up."""
    return [Turn(tool_calls=[("search", {"query": "pricing"})])] * LOOP_TURNS + [
        Turn(text="gave up")
    ]


def run_agent(api, answer) -> tuple[str, list[str]]:
    """One ``Agent.run`` of a fresh agent whose ``search`` tool answers ``answer(query)``;
    its answer and the queries its tool ran."""
    executions: list[str] = []

    @tool
    def search(query: str) -> str:
        """Search the documentation."""
        executions.append(query)
        return answer(query)

    client = OpenAIChatCompletionClient(model="gpt-test", api_key="test-key", base_url=api.base)
    agent = Agent(client=client, name="researcher", tools=[search])
    response = asyncio.run(asyncio.wait_for(agent.run("Find the pricing page."), timeout=60))
    return response.text, executions


def test_a_looping_agent_is_stopped_within_the_fourth_call(observe_loopguard, serve) -> None:
    count = metric_counter(observe_loopguard)
    executions: list[str] = []
    at_stop = executions_at_first_stop(observe_loopguard, lambda: len(executions))

    def answer(query: str) -> str:
        executions.append(query)
        return "no results"

    text, _ran = run_agent(serve(looping_turns()), answer)
    assert text == "gave up"  # observe mode: it went on
    assert len(executions) == LOOP_TURNS
    assert at_stop() <= 4
    (span,) = observe_loopguard.named("loopguard.run")
    assert span.attributes["loopguard.run.state"] == "stopped"
    assert count("loopguard.internal_errors") == 0


def test_a_productive_agent_gets_no_stop(observe_loopguard, serve, hidden: bool) -> None:
    count = metric_counter(observe_loopguard)
    text, executions = run_agent(serve(usage_turns(USAGE)), lambda query: f"result {query}")
    assert text == "answer"
    assert len(executions) == len(USAGE) - 1
    tools = observe_loopguard.tool_spans("search")
    assert len(tools) == len(USAGE) - 1
    assert ("gen_ai.tool.call.arguments" not in tools[0].attributes) is hidden
    assert not observe_loopguard.decision_events("stop")
    (span,) = observe_loopguard.named("loopguard.run")
    assert span.attributes["loopguard.run.state"] == "completed"
    assert span.attributes["loopguard.run.steps"] == len(USAGE)
    assert span.attributes["loopguard.run.tool_calls"] == len(USAGE) - 1
    assert count("loopguard.internal_errors") == 0


def test_two_invocations_under_one_application_span_are_two_runs(observe_loopguard, serve) -> None:
    """A looping invocation, then a productive one, under one request span: two runs, the
    second not stopped by the first one's STOP."""
    with observe_loopguard.app_tracer().start_as_current_span("handle request"):
        run_agent(serve(looping_turns()), lambda query: "no results")
        text, _ran = run_agent(serve(usage_turns(USAGE)), lambda query: f"result {query}")
    assert text == "answer"
    first, second = observe_loopguard.named("loopguard.run")
    assert first.attributes["loopguard.run.id"] != second.attributes["loopguard.run.id"]
    assert first.attributes["loopguard.run.state"] == "stopped"
    assert second.attributes["loopguard.run.state"] == "completed"
    assert second.attributes["loopguard.run.tool_calls"] == len(USAGE) - 1
