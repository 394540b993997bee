"""A ``Graph`` is one run; a looping agent in one of its nodes stops the graph. Its ready
nodes run as asyncio tasks that would swallow our interrupt (the graph then went on to its
next node and completed)."""

from __future__ import annotations

import pytest
from scripted_models import CountingSearch, looping_agent, productive_agent
from strands.multiagent import GraphBuilder
from strands.multiagent.base import Status

from otel_loopguard.engine.decisions import LoopGuardInterrupt


def research_then_write(research_search: CountingSearch, writer_search: CountingSearch):
    builder = GraphBuilder()
    builder.add_node(looping_agent(research_search), "research")
    builder.add_node(productive_agent(writer_search, searches=1), "write")
    builder.add_edge("research", "write")
    builder.set_max_node_executions(10)
    builder.set_graph_id("report")
    return builder.build()


def test_a_looping_node_stops_the_graph(loopguard):
    research, write = CountingSearch(), CountingSearch()
    graph = research_then_write(research, write)

    with pytest.raises(LoopGuardInterrupt) as stopped:
        graph("weather report for Paris")

    # a sub-agent's loop gets one replan first (OTEL_LOOPGUARD_SUB_AGENT_REPLANS), then the
    # stop at its next step: the model turn asking for the same call again, or that call
    assert {"repetition", "repeated_tool_steps"} & set(stopped.value.decision.detectors)
    assert len(research.executions) == 3
    assert write.executions == []  # the next node never ran
    assert graph.nodes["write"].executor.model.calls == 0
    spans = {s.name: s for s in loopguard.agent_spans()}
    assert set(spans) == {"invoke_agent report", "invoke_agent researcher"}
    assert len({s.attributes["loopguard.run.id"] for s in spans.values()}) == 1
    assert loopguard.run_state("report") == "stopped"
    loopguard.assert_every_span_ended_once()


def test_observe_mode_lets_the_graph_run_to_its_end(observe_loopguard):
    research, write = CountingSearch(), CountingSearch()
    graph = research_then_write(research, write)

    result = graph("weather report for Paris")

    assert result.status == Status.COMPLETED
    assert len(research.executions) == 7
    assert write.executions == ["page 1"]
    assert observe_loopguard.decision_events("stop")
