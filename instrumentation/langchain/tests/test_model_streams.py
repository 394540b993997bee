"""Model turns the caller streams itself (``model.stream`` / ``astream``) inside a run.

The agents here are hand-written loops inside an application's ``agent_run``: stream a
turn, add the chunks up, run the tools it asks for, as agent code that shows tokens to a
user does. The model is ``agents.TokenStreamingChatModel``: the scripted one, streaming
token by token the way OpenAI's integration does with ``stream_usage``.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import AsyncIterator
from typing import Any

import pytest
from agents import (
    ANSWER,
    RUN_CONFIG,
    TURN_USAGE,
    USER_INPUT,
    CountingChatModel,
    TokenStreamingChatModel,
    ToolCounter,
    build_react_graph,
    make_tools,
    priced_script,
    priced_turn,
    streamed_answer,
)
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.prompts import ChatPromptTemplate
from otel_loopguard_langchain import model_streams
from otel_loopguard_testing import wrappers_removed

from otel_loopguard import LoopGuardInterrupt
from otel_loopguard.guard import get_guard
from otel_loopguard.guard.decorators import agent_run

QUESTION = [HumanMessage("How much is the Pro plan?")]
INPUT_TOKENS = TURN_USAGE["input_tokens"]
OUTPUT_TOKENS = TURN_USAGE["output_tokens"]


class InvokeOnlyChatModel(CountingChatModel):
    """A provider integration that cannot stream (no ``_stream`` / ``_astream`` of its
    own): ``stream`` and ``astream`` fall back to ``invoke`` / ``ainvoke``."""

    _stream = BaseChatModel._stream
    _astream = BaseChatModel._astream


def model_streams_unwrapped() -> contextlib.AbstractContextManager[None]:
    """The instrumentation without the stream wrappers: what a run saw before them."""
    return wrappers_removed(BaseChatModel, "stream", "astream")


def stream_agent(model: Any, counter: ToolCounter, tracer: Any, max_turns: int = 10) -> str:
    """A hand-written agent loop: stream each turn, then run the tools it asks for."""
    tools = {tool.name: tool for tool in make_tools(counter)}
    messages: list[BaseMessage] = list(QUESTION)
    with agent_run("writer", tracer=tracer):
        for _turn in range(max_turns):
            answer = streamed_answer(model, messages)
            messages.append(answer)
            if not answer.tool_calls:
                return str(answer.content)
            messages.extend(tools[call["name"]].invoke(call) for call in answer.tool_calls)
    return ""


async def astream_agent(model: Any, counter: ToolCounter, tracer: Any) -> str:
    tools = {tool.name: tool for tool in make_tools(counter)}
    messages: list[BaseMessage] = list(QUESTION)
    with agent_run("writer", tracer=tracer):
        while True:
            answer = None
            async for chunk in model.astream(messages):
                answer = chunk if answer is None else answer + chunk
            assert answer is not None
            messages.append(answer)
            if not answer.tool_calls:
                return str(answer.content)
            for call in answer.tool_calls:
                messages.append(await tools[call["name"]].ainvoke(call))


def turns(count: int) -> tuple[int, int]:
    return (count * INPUT_TOKENS, count * OUTPUT_TOKENS)


# -- every streamed turn counts -------------------------------------------------------------


def test_a_hand_written_loop_streaming_its_turns_counts_their_usage(make_loopguard):
    # without the stream wrappers the run sees no model turn at all
    baseline = make_loopguard()
    with model_streams_unwrapped():
        model = TokenStreamingChatModel(messages=priced_script())
        stream_agent(model, ToolCounter(), baseline.app_tracer())
    assert baseline.run_usage("writer") == (None, None)

    loopguard = make_loopguard()
    model = TokenStreamingChatModel(messages=priced_script())
    counter = ToolCounter()

    answer = stream_agent(model, counter, loopguard.app_tracer())

    assert answer == ANSWER  # the caller still gets every token
    assert (counter["lookup"], model.calls) == (3, 4)
    assert model.chunks_sent > 4 * 3  # token by token, not one chunk a turn
    assert loopguard.run_usage("writer") == turns(4)


async def test_an_async_loop_streaming_its_turns_counts_their_usage(loopguard):
    model = TokenStreamingChatModel(messages=priced_script())
    counter = ToolCounter()

    answer = await astream_agent(model, counter, loopguard.app_tracer())

    assert answer == ANSWER
    assert (counter["lookup"], model.calls) == (3, 4)
    assert loopguard.run_usage("writer") == turns(4)


def test_a_chain_streaming_the_model_counts_its_turn(loopguard):
    """``(prompt | model).stream()`` reaches the model's ``stream`` through ``transform``."""
    model = TokenStreamingChatModel(messages=iter([priced_turn(ANSWER)]))
    chain = ChatPromptTemplate.from_messages([("user", "{question}")]) | model

    with agent_run("writer", tracer=loopguard.app_tracer()):
        text = "".join(str(c.content) for c in chain.stream({"question": "Pro plan price?"}))

    assert text == ANSWER
    assert loopguard.run_usage("writer") == turns(1)


# -- enforcement ----------------------------------------------------------------------------


def test_the_token_budget_stops_the_loop_at_the_end_of_the_stream_that_passed_it(
    make_loopguard,
):
    harness = make_loopguard(mode="enforce", token_budget=120)  # the third turn passes it
    model = TokenStreamingChatModel(messages=priced_script())
    counter = ToolCounter()

    with pytest.raises(LoopGuardInterrupt) as raised:
        stream_agent(model, counter, harness.app_tracer())

    assert raised.value.decision.detectors == ("budget",)
    assert model.calls == 3 and not model.closed  # the third stream was read to its end
    assert counter["lookup"] == 2  # the lookup the third turn asked for never ran
    assert harness.run_state("writer") == "budget_exceeded"
    harness.assert_every_span_ended_once()


async def test_a_spent_token_budget_vetoes_the_next_streamed_call(make_loopguard):
    harness = make_loopguard(mode="enforce", token_budget=100)  # spent by two turns
    model = TokenStreamingChatModel(messages=priced_script())
    counter = ToolCounter()

    with pytest.raises(LoopGuardInterrupt):
        await astream_agent(model, counter, harness.app_tracer())

    assert model.calls == 2  # the third call never reached the provider
    assert counter["lookup"] == 2
    assert harness.run_state("writer") == "budget_exceeded"


async def test_an_async_stream_raises_the_stop_at_its_end(make_loopguard):
    harness = make_loopguard(mode="enforce", token_budget=120)
    model = TokenStreamingChatModel(messages=priced_script())
    counter = ToolCounter()

    with pytest.raises(LoopGuardInterrupt) as raised:
        await astream_agent(model, counter, harness.app_tracer())

    assert raised.value.decision.detectors == ("budget",)
    assert model.calls == 3 and not model.closed
    assert counter["lookup"] == 2
    assert harness.run_state("writer") == "budget_exceeded"


def test_max_steps_vetoes_the_next_streamed_call(make_loopguard):
    harness = make_loopguard(mode="enforce", max_steps=2)
    model = TokenStreamingChatModel(messages=priced_script())
    counter = ToolCounter()

    with pytest.raises(LoopGuardInterrupt) as raised:
        stream_agent(model, counter, harness.app_tracer())

    assert raised.value.decision.detectors == ("budget",)
    assert model.calls == 2
    assert harness.run_state("writer") == "max_steps"


def test_a_langgraph_node_streaming_its_model_is_stopped_by_the_token_budget(make_loopguard):
    harness = make_loopguard(mode="enforce", token_budget=120)
    model = TokenStreamingChatModel(messages=priced_script())
    counter = ToolCounter()
    graph = build_react_graph(iter(()), counter, model=model, stream_model=True)

    with pytest.raises(LoopGuardInterrupt):
        graph.invoke(USER_INPUT, RUN_CONFIG)

    assert (model.calls, counter["lookup"]) == (3, 2)
    assert harness.run_state("support_agent") == "budget_exceeded"
    harness.assert_every_span_ended_once()


def test_a_truncated_streamed_answer_gets_the_truncation_decision(loopguard):
    cut_off = "The Pro plan costs 20 EUR per month, billed"
    model = TokenStreamingChatModel(messages=iter([priced_turn(cut_off, finish="length")]))

    answer = stream_agent(model, ToolCounter(), loopguard.app_tracer())

    assert answer == cut_off  # a replan is advice: the stream is not interrupted
    ((_span, replan),) = loopguard.decision_events("replan")
    assert replan["loopguard.detectors"] == ("truncation",)


def _asking_turns(topics: list[str]) -> list[Any]:
    """Turns that think aloud (more chunks than a batch) before asking for a lookup."""
    preamble = " ".join(["thinking"] * 40)
    turns = [
        priced_turn(
            preamble,
            finish="tool_calls",
            tool_calls=[{"name": "lookup", "args": {"topic": topic}, "id": f"call_{index}"}],
        )
        for index, topic in enumerate(topics)
    ]
    return [*turns, priced_turn(ANSWER)]


def _repeated_tool_steps(harness: Any) -> list[dict[str, Any]]:
    return [
        attributes
        for _span, attributes in harness.decision_events()
        if "repeated_tool_steps" in attributes["loopguard.detectors"]
    ]


def test_the_tool_calls_a_streamed_turn_asks_for_are_read_whole(make_loopguard):
    """Five turns asking for one lookup each: the same one is a loop of repeated tool
    steps; lookups that differ only at the end of their argument (the last piece streamed)
    are not."""
    common = "the price of the pro plan for a team of five, billed yearly, in region "
    distinct = ("eu-1", "eu-2", "eu-3", "eu-4", "eu-5")
    for regions, looping in (((distinct[0],) * len(distinct), True), (distinct, False)):
        harness = make_loopguard(mode="observe")
        turns = _asking_turns([common + region for region in regions])
        model = TokenStreamingChatModel(messages=iter(turns))

        answer = stream_agent(model, ToolCounter(), harness.app_tracer())

        assert answer == ANSWER
        assert bool(_repeated_tool_steps(harness)) is looping, regions


# -- counted once ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fallback",
    [
        pytest.param(lambda script: InvokeOnlyChatModel(messages=script), id="no-_stream"),
        pytest.param(
            lambda script: CountingChatModel(messages=script, disable_streaming=True),
            id="disable_streaming",
        ),
    ],
)
def test_a_stream_that_falls_back_to_invoke_counts_once(loopguard, fallback):
    streaming = TokenStreamingChatModel(messages=iter([priced_turn("Draft.")]))
    invoking = fallback(iter([priced_turn(ANSWER)]))

    with agent_run("writer", tracer=loopguard.app_tracer()):
        streamed_answer(streaming, QUESTION)
        (only,) = list(invoking.stream(QUESTION))  # the whole answer, from invoke
        steps = get_guard().current_run_steps()

    assert only.content == ANSWER and invoking.calls == 1
    assert steps == 2
    assert loopguard.run_usage("writer") == turns(2)


async def test_an_async_stream_that_falls_back_to_ainvoke_counts_once(loopguard):
    streaming = TokenStreamingChatModel(messages=iter([priced_turn("Draft.")]))
    invoking = InvokeOnlyChatModel(messages=iter([priced_turn(ANSWER)]))

    with agent_run("writer", tracer=loopguard.app_tracer()):
        async for _chunk in streaming.astream(QUESTION):
            pass
        answers = [chunk async for chunk in invoking.astream(QUESTION)]

    assert [a.content for a in answers] == [ANSWER]
    assert loopguard.run_usage("writer") == turns(2)


def test_a_streamed_turn_our_openai_package_reported_below_is_counted_once(loopguard):
    # the first turn is reported when its stream ends (as below a ChatOpenAI), the second not
    model = TokenStreamingChatModel(
        messages=iter(
            [
                priced_turn(
                    finish="tool_calls",
                    tool_calls=[{"name": "lookup", "args": {"topic": "pricing"}, "id": "c0"}],
                ),
                priced_turn(ANSWER),
            ]
        ),
        report_below=frozenset({0}),
    )

    answer = stream_agent(model, ToolCounter(), loopguard.app_tracer())

    assert answer == ANSWER
    assert loopguard.run_usage("writer") == turns(2)


def test_a_model_call_between_chunks_is_not_taken_for_the_streamed_turn(loopguard):
    """The caller's own code between chunks (here a second model, invoked per chunk)
    runs outside the streamed turn: each call's report is its own."""
    streaming = TokenStreamingChatModel(messages=iter([priced_turn("One two three.")]))
    summariser = CountingChatModel(messages=iter([priced_turn("Summary.")]))

    with agent_run("writer", tracer=loopguard.app_tracer()):
        for index, _chunk in enumerate(streaming.stream(QUESTION)):
            if index == 1:
                summariser.invoke(QUESTION)

    assert (streaming.calls, summariser.calls) == (1, 1)
    assert loopguard.run_usage("writer") == turns(2)


# -- abandoned streams ----------------------------------------------------------------------


def _abandon(how: str, model: Any) -> None:
    if how == "break":
        for _chunk in model.stream(QUESTION):
            break
    elif how == "close":
        stream = model.stream(QUESTION)
        next(stream)
        stream.close()
    elif how == "garbage collected":
        stream = model.stream(QUESTION)
        next(stream)
        del stream
        gc.collect()
    elif how == "error in the loop body":
        with pytest.raises(KeyError):
            for chunk in model.stream(QUESTION):
                raise KeyError(chunk.content)


@pytest.mark.parametrize("how", ["break", "close", "garbage collected", "error in the loop body"])
def test_an_abandoned_stream_reports_nothing_and_leaves_no_turn_open(make_loopguard, how):
    harness = make_loopguard(mode="enforce", token_budget=1_000)
    abandoned = TokenStreamingChatModel(messages=iter([priced_turn(ANSWER)]))
    streamed = TokenStreamingChatModel(messages=iter([priced_turn(ANSWER)]))
    invoked = CountingChatModel(messages=iter([priced_turn(ANSWER)]))

    with agent_run("writer", tracer=harness.app_tracer()):
        _abandon(how, abandoned)
        streamed_answer(streamed, QUESTION)
        invoked.invoke(QUESTION)

    assert abandoned.calls == 1 and abandoned.closed  # the provider's stream was closed
    # the abandoned turn is not reported; the two after it are, each once
    assert harness.run_usage("writer") == turns(2)
    assert harness.run_state("writer") == "completed"
    harness.assert_every_span_ended_once()


@pytest.mark.parametrize("how", ["aclose", "break"])
async def test_an_abandoned_async_stream_reports_nothing(loopguard, how):
    abandoned = TokenStreamingChatModel(messages=iter([priced_turn(ANSWER)]))
    streamed = TokenStreamingChatModel(messages=iter([priced_turn(ANSWER)]))

    with agent_run("writer", tracer=loopguard.app_tracer()):
        stream: AsyncIterator[Any] = abandoned.astream(QUESTION)
        async for _chunk in stream:
            break
        if how == "aclose":
            await stream.aclose()  # type: ignore[attr-defined]
        else:
            del stream  # closed by the event loop's async generator finalizer
            gc.collect()
            for _ in range(5):
                await asyncio.sleep(0)
        async for _chunk in streamed.astream(QUESTION):
            pass

    assert abandoned.calls == 1 and abandoned.closed
    assert loopguard.run_usage("writer") == turns(1)


# -- never break the host -------------------------------------------------------------------


def test_an_error_in_our_bookkeeping_never_breaks_the_stream(make_loopguard, monkeypatch):
    harness = make_loopguard(mode="enforce", token_budget=120)

    def broken(*args: Any) -> Any:
        raise RuntimeError("unexpected answer shape")

    monkeypatch.setattr(model_streams, "read_message", broken)
    model = TokenStreamingChatModel(messages=priced_script())
    counter = ToolCounter()

    answer = stream_agent(model, counter, harness.app_tracer())

    assert answer == ANSWER  # every chunk reached the caller, no interrupt
    assert counter["lookup"] == 3
    assert any("langchain.model_turn" in r.getMessage() for r in harness.caplog.records)
