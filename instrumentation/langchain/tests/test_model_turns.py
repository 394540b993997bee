"""Model turns of real LangGraph runs: token budgets, max steps, truncation, premature ends.

The chat model is scripted (no network): each answer is an ``AIMessage`` with the usage,
finish reason and tool calls a provider integration would put on it. The productive
script makes four model turns: three ``lookup`` calls, then the answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from agents import (
    ANSWER,
    RUN_CONFIG,
    USER_INPUT,
    CountingChatModel,
    ToolCounter,
    build_react_graph,
    final_answer,
    priced_script,
    priced_turn,
)
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from otel_loopguard_langchain import model_turns
from otel_loopguard_testing import wrappers_removed

from otel_loopguard import LoopGuardInterrupt

BUDGET = 120  # 50 tokens a turn: the third turn goes over


class StreamingChatModel(CountingChatModel):
    """A provider integration that streams: each answer arrives as one chunk."""

    def _stream(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        message = self._generate(messages, *args, **kwargs).generations[0].message
        assert isinstance(message, AIMessage)
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content=message.content,
                tool_calls=message.tool_calls,
                usage_metadata=message.usage_metadata,
                response_metadata=message.response_metadata,
                chunk_position="last",
            )
        )


def model_turns_unwrapped() -> contextlib.AbstractContextManager[None]:
    """The instrumentation as it was before model turns were observed (tools, runs only)."""
    return wrappers_removed(BaseChatModel, "_generate_with_cache", "_agenerate_with_cache")


def test_token_budget_stops_the_run_before_the_next_tool_runs(make_loopguard):
    # without the model turns, the guard sees no usage: the same run ignores the budget
    baseline_counter = ToolCounter()
    baseline_model = CountingChatModel(messages=priced_script())
    make_loopguard(mode="enforce", token_budget=BUDGET)
    with model_turns_unwrapped():
        baseline = build_react_graph(iter(()), baseline_counter, model=baseline_model).invoke(
            USER_INPUT, RUN_CONFIG
        )
    assert final_answer(baseline) == ANSWER
    assert (baseline_counter["lookup"], baseline_model.calls) == (3, 4)

    harness = make_loopguard(mode="enforce", token_budget=BUDGET)
    counter = ToolCounter()
    model = CountingChatModel(messages=priced_script())

    with pytest.raises(LoopGuardInterrupt) as raised:
        build_react_graph(iter(()), counter, model=model).invoke(USER_INPUT, RUN_CONFIG)

    assert raised.value.decision.detectors == ("budget",)
    _assert_stopped_by_the_budget_at_the_third_turn(harness, counter, model)


def _assert_stopped_by_the_budget_at_the_third_turn(harness: Any, counter: Any, model: Any):
    """150 tokens after the third turn (of :func:`priced_script`): its lookup never runs, no
    fourth model call; the run ended ``budget_exceeded`` with the three turns' usage."""
    assert counter["lookup"] == 2
    assert model.calls == 3
    assert harness.run_state("support_agent") == "budget_exceeded"
    (run,) = harness.named("invoke_agent support_agent")
    assert run.attributes["gen_ai.usage.input_tokens"] == 120
    assert run.attributes["gen_ai.usage.output_tokens"] == 30
    harness.assert_every_span_ended_once()


def test_async_run_is_stopped_by_the_token_budget(make_loopguard):
    harness = make_loopguard(mode="enforce", token_budget=BUDGET)
    counter = ToolCounter()
    model = CountingChatModel(messages=priced_script())
    graph = build_react_graph(iter(()), counter, model=model)

    with pytest.raises(LoopGuardInterrupt) as raised:
        asyncio.run(graph.ainvoke(USER_INPUT, RUN_CONFIG))

    assert raised.value.decision.detectors == ("budget",)
    _assert_stopped_by_the_budget_at_the_third_turn(harness, counter, model)


def test_a_model_streaming_its_tokens_is_stopped_by_the_token_budget(make_loopguard):
    """``stream_mode="messages"`` makes LangGraph stream each model call token by token."""
    harness = make_loopguard(mode="enforce", token_budget=BUDGET)
    counter = ToolCounter()
    model = StreamingChatModel(messages=priced_script())
    graph = build_react_graph(iter(()), counter, model=model)

    streamed: list[Any] = []
    with pytest.raises(LoopGuardInterrupt):
        for item in graph.stream(USER_INPUT, RUN_CONFIG, stream_mode="messages"):
            streamed.append(item)

    assert any(isinstance(message, AIMessageChunk) for message, _meta in streamed)
    _assert_stopped_by_the_budget_at_the_third_turn(harness, counter, model)


def test_max_steps_makes_no_further_model_call(make_loopguard):
    harness = make_loopguard(mode="enforce", max_steps=2)
    counter = ToolCounter()
    model = CountingChatModel(messages=priced_script())

    with pytest.raises(LoopGuardInterrupt) as raised:
        build_react_graph(iter(()), counter, model=model).invoke(USER_INPUT, RUN_CONFIG)

    assert raised.value.decision.detectors == ("budget",)
    assert model.calls == 2  # the third call is vetoed before it is made
    assert counter["lookup"] == 2
    assert harness.run_state("support_agent") == "max_steps"


def test_a_truncated_answer_gets_the_truncation_decision(loopguard):
    cut_off = "The Pro plan costs 20 EUR per month, billed"
    script = [priced_turn(cut_off, finish="length"), priced_turn(" yearly.")]
    model = CountingChatModel(messages=iter(script))

    result = build_react_graph(iter(()), ToolCounter(), model=model).invoke(USER_INPUT, RUN_CONFIG)

    # not interrupted: a replan is advice (its continuation prompt asks again at once, and
    # the graph gets the joined answer: tests/test_recommendations.py)
    assert final_answer(result) == cut_off + " yearly."
    ((_span, replan),) = loopguard.decision_events("replan")
    assert replan["loopguard.detectors"] == ("truncation",)


def test_an_empty_end_after_a_failing_tool_is_a_premature_end(loopguard):
    @tool
    def fetch(url: str) -> str:
        """Fetch a page."""
        raise PermissionError(f"403 permission denied: {url}")

    script = [
        priced_turn(
            finish="tool_calls",
            tool_calls=[{"name": "fetch", "args": {"url": "/admin"}, "id": "c1"}],
        ),
        priced_turn(""),  # the model ends its turn with nothing at all
        priced_turn("The admin page is forbidden."),  # re-prompted (test_recommendations.py)
    ]
    model = CountingChatModel(messages=iter(script))

    result = build_react_graph(iter(()), ToolCounter(), model=model, tools=[fetch]).invoke(
        USER_INPUT, RUN_CONFIG
    )

    assert final_answer(result) == "The admin page is forbidden."
    ((_span, replan),) = loopguard.decision_events("replan")
    assert replan["loopguard.detectors"] == ("premature_end",)


def test_a_turn_reported_below_is_counted_once(loopguard):
    # turns 0 and 2 are reported from inside the model call, turns 1 and 3 are not
    model = CountingChatModel(messages=priced_script(), report_below=frozenset({0, 2}))

    result = build_react_graph(iter(()), ToolCounter(), model=model).invoke(USER_INPUT, RUN_CONFIG)

    assert final_answer(result) == ANSWER
    (run,) = loopguard.named("invoke_agent support_agent")
    assert run.attributes["gen_ai.usage.input_tokens"] == 4 * 40
    assert run.attributes["gen_ai.usage.output_tokens"] == 4 * 10


class WaitingChatModel(CountingChatModel):
    """Answers only once ``go`` is set: a model call still in flight while another runs."""

    go: Any = None

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        assert self.go.wait(timeout=10), "the other branch never reported its turn"
        return super()._generate(messages, *args, **kwargs)


class SignallingChatModel(CountingChatModel):
    """Reports its turns from below (like our OpenAI package), then sets ``done``."""

    done: Any = None

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        result = super()._generate(messages, *args, **kwargs)
        self.done.set()
        return result


def test_parallel_branches_of_one_run_count_each_modelpriced_turn(loopguard):
    """Two model nodes in one superstep run at once: the branch whose turn was reported
    below finishes while the other is in flight, and both turns still count."""
    reported = threading.Event()
    slow = WaitingChatModel(messages=iter([priced_turn("draft A")]), go=reported)
    fast = SignallingChatModel(
        messages=iter([priced_turn("draft B")]), report_below=frozenset({0}), done=reported
    )

    def node(model: Any) -> Any:
        return lambda state: {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("writer_a", node(slow))
    graph.add_node("writer_b", node(fast))
    graph.add_edge(START, "writer_a")
    graph.add_edge(START, "writer_b")
    graph.add_edge("writer_a", END)
    graph.add_edge("writer_b", END)

    graph.compile(name="two_writers").invoke(USER_INPUT, RUN_CONFIG)

    assert (slow.calls, fast.calls) == (1, 1)
    (run,) = loopguard.named("invoke_agent two_writers")
    assert run.attributes["gen_ai.usage.input_tokens"] == 2 * 40
    assert run.attributes["gen_ai.usage.output_tokens"] == 2 * 10


def test_an_error_in_our_bookkeeping_never_breaks_the_run(make_loopguard, monkeypatch, caplog):
    make_loopguard(mode="enforce", token_budget=BUDGET)

    def broken(model: Any, result: Any) -> Any:
        raise RuntimeError("unexpected answer shape")

    monkeypatch.setattr(model_turns, "_read_answer", broken)
    counter = ToolCounter()
    model = CountingChatModel(messages=priced_script())

    result = build_react_graph(iter(()), counter, model=model).invoke(USER_INPUT, RUN_CONFIG)

    assert final_answer(result) == ANSWER
    assert counter["lookup"] == 3
    assert any("langchain.model_turn" in r.getMessage() for r in caplog.records)
