"""Each model call of a Strands agent counted once: tokens, budgets, max steps, host safety,
with Strands' own tracing off and on."""

from __future__ import annotations

import pytest
from otel_loopguard_testing import unreadable_by
from scripted_models import (
    INPUT_TOKENS,
    OUTPUT_TOKENS,
    CountingSearch,
    ScriptedModel,
    answer_text,
    looping_agent,
    productive_agent,
)
from strands import Agent

from otel_loopguard.engine.decisions import LoopGuardInterrupt


def run_usage(harness, agent: str = "researcher") -> tuple[int, int]:
    (span,) = ours(harness.named(f"invoke_agent {agent}"))
    attributes = span.attributes
    return attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]


def ours(spans):
    """Our spans: Strands makes spans of the same names (its own instrumentation scope)."""
    return [s for s in spans if s.instrumentation_scope.name.startswith("otel_loopguard")]


def test_every_model_call_counts_once(loopguard):
    search = CountingSearch()
    agent = productive_agent(search)

    result = agent("find it")

    assert answer_text(result) == "found after 3 searches"
    assert agent.model.calls == 4
    assert run_usage(loopguard) == (4 * INPUT_TOKENS, 4 * OUTPUT_TOKENS)
    assert loopguard.named("chat") == []  # Strands' own tracing is off here: we reported


def test_with_strands_tracing_each_turn_and_each_execution_counts_once(strands_tracing):
    """Strands' ``chat`` spans, read by the span processor, report the turns (we stand back);
    its ``execute_tool`` spans nest in our gate spans and are not counted again."""
    loopguard = strands_tracing
    search = CountingSearch()
    agent = productive_agent(search)

    result = agent("find it")

    assert answer_text(result) == "found after 3 searches"
    assert len(loopguard.named("chat")) == 4  # Strands' spans were recorded
    assert run_usage(loopguard) == (4 * INPUT_TOKENS, 4 * OUTPUT_TOKENS)
    gates = ours(loopguard.tool_spans("search"))
    strands_tools = [s for s in loopguard.tool_spans("search") if s not in gates]
    assert len(gates) == len(strands_tools) == 3
    gate_ids = {s.context.span_id for s in gates}
    assert {s.parent.span_id for s in strands_tools} == gate_ids
    (agent_span,) = ours(loopguard.named("invoke_agent researcher"))
    (strands_agent,) = [s for s in loopguard.named("invoke_agent researcher") if s != agent_span]
    assert strands_agent.parent.span_id == agent_span.context.span_id
    loopguard.assert_every_span_ended_once()


def test_with_strands_tracing_the_loop_is_stopped_at_the_same_call(strands_tracing):
    loopguard = strands_tracing
    search = CountingSearch()
    agent = looping_agent(search)

    with pytest.raises(LoopGuardInterrupt):
        agent("What is the weather in Paris?")

    # each execution counted once: a second count would stop the loop a call earlier
    assert len(search.executions) == 3
    assert agent.model.calls == 3
    (agent_span,) = ours(loopguard.named("invoke_agent researcher"))
    assert agent_span.attributes["loopguard.run.state"] == "stopped"
    loopguard.assert_every_span_ended_once()


def test_a_turn_a_layer_below_reported_counts_once(loopguard):
    """A provider SDK's instrumentation below the model (OpenAI's, Anthropic's) makes a
    ``chat`` span that the span processor reports: our report stands back."""
    search = CountingSearch()
    agent = productive_agent(search, searches=2)
    agent.model.sdk_tracer = loopguard.app_tracer()

    agent("find it")

    assert len(loopguard.named("chat scripted-model")) == 3
    assert run_usage(loopguard) == (3 * INPUT_TOKENS, 3 * OUTPUT_TOKENS)


@pytest.mark.parametrize("tracing", [False, True], ids=["ours", "strands-spans"])
def test_token_budget_stops_the_turn_that_goes_over_before_its_tool_runs(
    make_loopguard, trace_strands, tracing
):
    loopguard = make_loopguard(mode="enforce", token_budget=75)
    if tracing:
        trace_strands(loopguard)
    search = CountingSearch(lambda query, n: f"result {n}")
    agent = productive_agent(search, searches=5)

    with pytest.raises(LoopGuardInterrupt) as stopped:
        agent("find it")

    assert stopped.value.decision.detectors == ("budget",)
    assert agent.model.calls == 3  # 90 tokens after the third
    assert len(search.executions) == 2  # the third turn's search never ran
    (span,) = ours(loopguard.named("invoke_agent researcher"))
    assert span.attributes["loopguard.run.state"] == "budget_exceeded"


def test_max_steps_vetoes_the_model_call_before_it_is_made(make_loopguard):
    loopguard = make_loopguard(mode="enforce", max_steps=2)
    search = CountingSearch(lambda query, n: f"result {n}")
    agent = productive_agent(search, searches=5)

    with pytest.raises(LoopGuardInterrupt):
        agent("find it")

    assert agent.model.calls == 2  # the third call was never made nor paid for
    assert loopguard.run_state("researcher") == "max_steps"


class _NamedAgent(
    unreadable_by("otel_loopguard_strands", "name", "an agent shape we do not know"), Agent
):
    """An ``Agent`` whose name this package cannot read (Strands and the program can): the
    stand-in for an agent shape we do not know yet."""


def test_an_error_in_our_bookkeeping_never_breaks_the_agent(loopguard):
    search = CountingSearch(lambda query, n: f"result {n}")

    def script(n: int):
        return [("search", {"query": f"page {n}"})] if n <= 2 else "found it"

    agent = _NamedAgent(
        name="researcher", model=ScriptedModel(script), tools=[search.tool], callback_handler=None
    )

    result = agent("find it")

    assert answer_text(result) == "found it"
    assert len(search.executions) == 2
    logged = [r.getMessage() for r in loopguard.caplog.records]
    assert any("strands.model_turn" in message for message in logged)
    assert any("strands.run_name" in message for message in logged)
    (span,) = loopguard.named("invoke_agent _NamedAgent")
    assert span.attributes["loopguard.run.state"] == "completed"
    assert len(loopguard.tool_spans("search")) == 2  # the gate goes on working


def test_a_conversation_in_trace_attributes_keys_the_run_and_its_turns(strands_tracing):
    """``trace_attributes={"session.id": ...}`` (Strands' way to group traces in Langfuse)
    puts the conversation on every Strands span, and the span processor keys the turns it
    reads from Strands' ``chat`` spans by it: the invocation's run is that conversation too,
    or its turns would be counted in another run."""
    loopguard = strands_tracing
    search = CountingSearch()
    agent = productive_agent(search, trace_attributes={"session.id": "chat-7"})

    agent("find it")

    (span,) = ours(loopguard.named("invoke_agent researcher"))
    assert span.attributes["gen_ai.conversation.id"] == "chat-7"
    assert run_usage(loopguard) == (4 * INPUT_TOKENS, 4 * OUTPUT_TOKENS)
    assert loopguard.guard.monitor.run_snapshot("chat-7").counters.steps == 4


def test_a_stopped_conversation_stays_stopped(make_loopguard):
    loopguard = make_loopguard(mode="enforce", policy="strict")
    search = CountingSearch()
    agent = looping_agent(search, trace_attributes={"gen_ai.conversation.id": "chat-8"})

    with pytest.raises(LoopGuardInterrupt):
        agent("What is the weather in Paris?")
    calls = agent.model.calls
    with pytest.raises(LoopGuardInterrupt):
        agent("and in Lyon?")

    assert agent.model.calls == calls  # its next message is stopped before its model call
    assert loopguard.guard.monitor.run_snapshot("chat-8").stopped
