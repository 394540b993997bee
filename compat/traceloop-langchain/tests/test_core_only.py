"""OpenLLMetry's LangChain spans alone with our core, observe mode (issue 17, "Done when").

A LangGraph ReAct graph on langchain-core's fake chat model, traced only by
``opentelemetry-instrumentation-langchain``; our span processor reads its spans. Its tool
spans record the arguments as the callback envelope (``input_str``, ``tags``,
``metadata.langgraph_step``, ``kwargs.tool_call_id``) and the result as the serialized
``ToolMessage``: unwrapped, the looping run's calls and results are identical.
"""

from __future__ import annotations

import pytest
from agents import build_react_graph, final_answer, looping_script, productive_script
from otel_loopguard_testing.decided import calls_before_stop, stopped_at
from otel_loopguard_testing.metrics import metric_counter
from otel_loopguard_testing.scripted_models import ToolCounter

LOOP_CALLS = 8
USER_INPUT = {"messages": [("user", "What does the Pro plan cost?")]}


@pytest.fixture(params=["content-on", "content-off"])
def content(request, monkeypatch) -> bool:
    """Traceloop's content capture (``TRACELOOP_TRACE_CONTENT``, read per span)."""
    on = request.param == "content-on"
    monkeypatch.setenv("TRACELOOP_TRACE_CONTENT", "true" if on else "false")
    return on


def _their_tool_spans(harness, tool: str):
    return sorted(
        (s for s in harness.tool_spans(tool) if s.attributes.get("traceloop.span.kind") == "tool"),
        key=lambda s: s.start_time,
    )


def test_a_looping_graph_gets_a_stop_within_the_fourth_call(observe_loopguard, monkeypatch):
    monkeypatch.setenv("TRACELOOP_TRACE_CONTENT", "true")
    errors = metric_counter(observe_loopguard)
    counter = ToolCounter()
    graph = build_react_graph(looping_script(give_up_after=LOOP_CALLS), counter)

    state = graph.invoke(USER_INPUT)

    assert final_answer(state) == "I could not find the price."  # observe: not enforced
    assert counter["search"] == LOOP_CALLS
    assert len(_their_tool_spans(observe_loopguard, "search")) == LOOP_CALLS
    calls = calls_before_stop(observe_loopguard, _their_tool_spans(observe_loopguard, "search"))
    assert calls is not None and calls <= 4, calls
    assert observe_loopguard.decision_events("stop")
    assert errors("loopguard.internal_errors") == 0


def test_a_productive_graph_gets_no_stop(observe_loopguard, content):
    errors = metric_counter(observe_loopguard)
    counter = ToolCounter()
    graph = build_react_graph(productive_script(), counter)

    state = graph.invoke(USER_INPUT)

    assert "20 EUR" in final_answer(state)
    assert counter["lookup"] == 3
    assert len(_their_tool_spans(observe_loopguard, "lookup")) == 3
    assert observe_loopguard.decision_events("stop") == []
    assert [d for d, _ in observe_loopguard.decided if d.action.value == "stop"] == []
    assert errors("loopguard.internal_errors") == 0


def test_without_content_a_loop_is_not_claimed_from_unrecorded_calls(
    observe_loopguard, monkeypatch
):
    """Content off: their spans carry no arguments nor results; calls never look identical
    (a false STOP is worse than a missed one), so the run gets no STOP from them."""
    monkeypatch.setenv("TRACELOOP_TRACE_CONTENT", "false")
    counter = ToolCounter()
    graph = build_react_graph(looping_script(give_up_after=LOOP_CALLS), counter)

    graph.invoke(USER_INPUT)

    spans = _their_tool_spans(observe_loopguard, "search")
    assert len(spans) == LOOP_CALLS
    assert all("gen_ai.tool.call.arguments" not in s.attributes for s in spans)
    assert [d for d, _ in observe_loopguard.decided if d.action.value == "stop"] == []


def test_two_invocations_under_one_application_span_are_two_runs(observe_loopguard, monkeypatch):
    monkeypatch.setenv("TRACELOOP_TRACE_CONTENT", "true")
    tracer = observe_loopguard.app_tracer()

    with tracer.start_as_current_span("handle request"):
        for _ in range(2):
            graph = build_react_graph(looping_script(give_up_after=LOOP_CALLS), ToolCounter())
            graph.invoke(USER_INPUT)

    stopped_runs = {
        event.run_id
        for decision, event in observe_loopguard.decided
        if decision.action.value == "stop"
    }
    assert len(stopped_runs) == 2  # each invocation its own run, each stopped
    (app,) = observe_loopguard.named("handle request")
    assert all(
        s.context.trace_id == app.context.trace_id
        for s in _their_tool_spans(observe_loopguard, "search")
    )


def test_core_only_tokens_are_counted_from_their_model_spans(make_loopguard, monkeypatch):
    """A 120-token budget in observe mode: their chat spans carry each turn's 40 + 10
    tokens, so the budget STOP comes with the third turn."""
    from agents import CountingChatModel, priced_script

    monkeypatch.setenv("TRACELOOP_TRACE_CONTENT", "true")
    harness = make_loopguard(mode="observe", token_budget=120)
    model = CountingChatModel(messages=priced_script())

    build_react_graph(iter(()), ToolCounter(), model=model).invoke(USER_INPUT)

    chats = [s for s in harness.spans() if s.attributes.get("gen_ai.operation.name") == "chat"]
    assert stopped_at(harness, chats, "budget") == 3
