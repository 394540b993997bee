"""One real execution seen by two instrumentations counts once, whichever parent each
gives its span (spans/executions.py): tool-call id, or tool name and overlapping time.

The foreign spans here are shaped as OpenInference's and Traceloop's LangChain tracers make
them: a tool span parented to their own chain span (a sibling of our gate span's tree, not
inside it), and a model span that ends after our wrapper reported the turn.
"""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry import trace

from otel_loopguard.engine.decisions import LoopGuardInterrupt

from .helpers import Stack

OPENINFERENCE_TOOL = {"openinference.span.kind": "TOOL", "tool.name": "search"}


def _their_chain(stack: Stack):
    """Their chain span, started outside our tool span (its children hang under it)."""
    return stack.tracer.start_span("tools", attributes={"openinference.span.kind": "CHAIN"})


def _their_tool_span(stack: Stack, chain, output: str = "no results", **attributes) -> None:
    """Their tool span of the execution running now: parented to their chain span."""
    context = trace.set_span_in_context(chain)
    span = stack.tracer.start_span("search", context=context, attributes=attributes)
    span.set_attribute("input.value", "pricing")
    span.set_attribute("output.value", output)
    span.end()


def _gated_loop(stack: Stack, calls: int, **tool_attributes) -> tuple[list[int], Any]:
    """Our gate around each execution, their tool span inside it (under their chain span);
    returns the executions and the run's counters before it ended."""
    guard, tracer = stack.guard, stack.tracer
    executed: list[int] = []
    counters = None
    with guard.agent_run(tracer, "researcher"):
        run_id = guard.resolve_run().run_id
        try:
            for index in range(calls):
                chain = _their_chain(stack)
                try:
                    with guard.tool_call(
                        tracer, "search", {"query": "pricing"}, call_id=f"call_{index}"
                    ) as call:
                        executed.append(index)
                        # their result as they record it (here: another text each time)
                        _their_tool_span(stack, chain, f"no results ({index})", **tool_attributes)
                        call.set_result("no results")
                finally:
                    chain.end()
        finally:
            counters = guard.monitor.run_snapshot(run_id).counters
    return executed, counters


def test_their_tool_span_under_their_own_chain_span_is_not_a_second_call(
    enforcing: Stack,
) -> None:
    # counted twice, each execution would be two calls, and their results (read as other
    # outputs) interleaved with ours would keep resetting no-progress
    with pytest.raises(LoopGuardInterrupt) as stopped:
        _gated_loop(enforcing, 8, **OPENINFERENCE_TOOL)
    assert "no_progress" in stopped.value.decision.detectors
    assert len(enforcing.spans("search")) == 3  # their spans: three real executions
    (run,) = enforcing.spans("invoke_agent researcher")
    assert run.attributes["loopguard.run.state"] == "stopped"


def test_each_execution_is_one_call_in_the_run(stack: Stack) -> None:
    executed, counters = _gated_loop(stack, 2, **OPENINFERENCE_TOOL)
    assert executed == [0, 1]
    assert counters.tool_calls == 2


def test_a_matching_call_id_pairs_them_even_under_another_name(stack: Stack) -> None:
    attributes = {**OPENINFERENCE_TOOL, "tool.name": "functions.search"}
    _, counters = _gated_loop(stack, 1, **attributes, **{"tool_call.id": "call_0"})
    assert counters.tool_calls == 1


def test_a_different_call_id_is_another_execution(stack: Stack) -> None:
    # their span names another call (a tool the gate does not wrap, run from inside this
    # one): fed, a call of its own
    _, counters = _gated_loop(stack, 2, **OPENINFERENCE_TOOL, **{"tool_call.id": "other"})
    assert counters.tool_calls == 4


def test_a_call_that_ran_after_ours_ended_is_another_execution(stack: Stack) -> None:
    guard, tracer = stack.guard, stack.tracer
    with guard.agent_run(tracer, "researcher"):
        run_id = guard.resolve_run().run_id
        chain = _their_chain(stack)
        with guard.tool_call(tracer, "search", {"query": "a"}) as call:
            call.set_result("one")
        _their_tool_span(stack, chain, **OPENINFERENCE_TOOL)  # no overlap in time
        chain.end()
        assert guard.monitor.run_snapshot(run_id).counters.tool_calls == 2


def test_their_model_span_ending_after_our_report_counts_once(stack: Stack) -> None:
    """OpenInference's LangChain model span starts before and ends after the turn our
    wrapper reports: the turn counts once."""
    guard, tracer = stack.guard, stack.tracer
    with guard.agent_run(tracer, "researcher"):
        run_id = guard.resolve_run().run_id
        for _ in range(2):
            theirs = tracer.start_span("ChatModel")
            guard.observe_llm_response(input_tokens=40, output_tokens=10)
            theirs.set_attributes(
                {
                    "openinference.span.kind": "LLM",
                    "llm.token_count.prompt": 40,
                    "llm.token_count.completion": 10,
                }
            )
            theirs.end()
        counters = guard.monitor.run_snapshot(run_id).counters
    assert (counters.steps, counters.input_tokens, counters.output_tokens) == (2, 80, 20)
    (run,) = stack.spans("invoke_agent researcher")
    assert run.attributes["gen_ai.usage.input_tokens"] == 80


def test_two_foreign_instrumentations_of_one_tool_count_it_once(stack: Stack) -> None:
    """No gate: OpenInference's and Traceloop's tool spans of one execution (neither inside
    the other) are one call."""
    tracer = stack.tracer
    guard = stack.guard
    with guard.agent_run(tracer, "researcher"):
        run_id = guard.resolve_run().run_id
        for _ in range(2):
            outer = tracer.start_span("search.tool", attributes={"traceloop.span.kind": "tool"})
            chain = _their_chain(stack)
            _their_tool_span(stack, chain, **OPENINFERENCE_TOOL)
            chain.end()
            outer.set_attribute("traceloop.entity.name", "search")
            outer.end()
        assert guard.monitor.run_snapshot(run_id).counters.tool_calls == 2


def test_a_model_span_around_another_of_the_same_call_counts_once(stack: Stack) -> None:
    """OpenInference's LlamaIndex tracer: a subclass's ``achat`` around the base class's
    ``achat`` around ``chat``, one call with its tokens on each, and the request's preparation
    marked LLM too: one turn, its tokens once."""
    guard, tracer = stack.guard, stack.tracer
    llm = {"openinference.span.kind": "LLM"}
    usage = {**llm, "llm.token_count.prompt": 60, "llm.token_count.completion": 10}
    with guard.agent_run(tracer, "researcher"):
        run_id = guard.resolve_run().run_id
        for _ in range(2):
            with tracer.start_as_current_span("Agent.run_agent_step"):
                with tracer.start_as_current_span("ScriptedLLM._prepare_chat_with_tools") as prep:
                    prep.set_attributes(llm)
                with tracer.start_as_current_span("ScriptedLLM.achat") as outer:
                    with tracer.start_as_current_span("MockLLM.achat") as inner:
                        with tracer.start_as_current_span("MockLLM.chat") as chat:
                            chat.set_attributes(usage)
                        inner.set_attributes(usage)
                    outer.set_attributes(usage)
        counters = guard.monitor.run_snapshot(run_id).counters
    assert (counters.steps, counters.input_tokens, counters.output_tokens) == (2, 120, 20)


def test_their_model_span_inside_our_reported_call_counts_once(stack: Stack) -> None:
    """OpenInference's OpenAI span ends inside our OpenAI package's ``chat`` span (they wrap
    the client's request, below our wrapper): fed first, it is the turn; our report of the
    same call after it is not a second one."""
    guard, tracer = stack.guard, stack.tracer
    usage = {"openinference.span.kind": "LLM", "llm.token_count.prompt": 40}
    with guard.agent_run(tracer, "researcher"):
        run_id = guard.resolve_run().run_id
        for _ in range(2):
            with tracer.start_as_current_span("chat gpt-test") as ours:
                with tracer.start_as_current_span("ChatCompletion", attributes=usage):
                    pass
                guard.observe_llm_response(input_tokens=40, output_tokens=10, span=ours)
        counters = guard.monitor.run_snapshot(run_id).counters
    assert (counters.steps, counters.input_tokens) == (2, 80)
