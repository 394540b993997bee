"""Our LangChain package beside OpenInference's LangChain instrumentation, enforce mode: one
tool execution has our gate span and theirs (parented to their own chain span, not inside
ours), one model call our wrapper's report and their model span; each counts once."""

from __future__ import annotations

from typing import Any

import pytest
from agents import (
    ANSWER,
    RUN_CONFIG,
    USER_INPUT,
    CountingChatModel,
    build_react_graph,
    final_answer,
    looping_script,
    priced_script,
    productive_script,
    run_react_graph,
)
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.compat_checks import (
    assert_budget_exceeded,
    assert_completed_unstopped,
    assert_interrupted,
    openinference_spans,
)
from otel_loopguard_testing.scripted_models import ToolCounter

from otel_loopguard import LoopGuardInterrupt


def _looping() -> tuple[Any, Any]:
    counter = ToolCounter()
    graph = build_react_graph(looping_script(), counter)
    return lambda: graph.invoke(USER_INPUT, RUN_CONFIG), lambda: counter["search"]


def test_a_looping_graph_is_interrupted_in_every_invocation(beside_ours) -> None:
    harness = beside_ours(mode="enforce")
    # theirs too: each span ended once
    assert_interrupted(harness, _looping, invocations=2, agent="support_agent")
    assert len(openinference_spans(harness, "TOOL")) == 6  # both at work: theirs per execution


def test_a_productive_graph_completes_with_the_same_answer(beside_ours) -> None:
    harness = beside_ours(mode="enforce")
    count = metric_counter(harness)
    counter = ToolCounter()
    state = run_react_graph(productive_script(), counter)
    assert final_answer(state) == ANSWER  # the script's answer, as without any guard
    assert counter["lookup"] == 3
    assert_completed_unstopped(harness, count, "support_agent")


def test_steps_and_tokens_on_the_agent_span_are_the_real_ones(beside_ours) -> None:
    harness = beside_ours(mode="enforce")
    count = metric_counter(harness)
    model = CountingChatModel(messages=priced_script())
    state = run_react_graph(iter(()), ToolCounter(), model=model)
    assert final_answer(state) == ANSWER
    assert model.calls == 4
    assert len(openinference_spans(harness, "LLM")) == 4
    assert harness.run_usage("support_agent") == (160, 40)  # 4 turns of 40 + 10
    assert count("loopguard.internal_errors") == 0


def test_a_token_budget_stops_at_the_third_turn(beside_ours) -> None:
    harness = beside_ours(mode="enforce", token_budget=120)  # 50 a turn: the 3rd goes over
    count = metric_counter(harness)
    counter = ToolCounter()
    model = CountingChatModel(messages=priced_script())
    with pytest.raises(LoopGuardInterrupt) as stopped:
        run_react_graph(iter(()), counter, model=model)
    assert (model.calls, counter["lookup"]) == (3, 2)  # counted twice, it would stop at 2
    assert_budget_exceeded(harness, count, stopped, "support_agent", (120, 30))


def test_with_their_content_hidden_the_looping_graph_is_interrupted_too(
    content_hidden, beside_ours
) -> None:
    harness = beside_ours(mode="enforce")
    assert_interrupted(harness, _looping, agent="support_agent")
    tools = openinference_spans(harness, "TOOL")
    assert tools and all(s.attributes["output.value"] == "__REDACTED__" for s in tools)
