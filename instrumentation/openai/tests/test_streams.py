"""Streamed answers: judged at their end, the span ended exactly once on every way out."""

from __future__ import annotations

import asyncio
import gc

import pytest
from conftest import TRACER
from otel_loopguard_testing import (
    assert_truncated_streams_replanned_then_stopped,
    close_a_stream_early,
)
from otel_loopguard_testing.scripted_openai import ScriptedAPI, Turn, http

from otel_loopguard.engine.decisions import LoopGuardInterrupt
from otel_loopguard.guard import get_guard

MESSAGES = [{"role": "user", "content": "write the report"}]


def _stream_turns(client, turns: int) -> list[str]:
    """Consume `turns` streamed answers inside one agent run; returns their texts."""
    texts = []
    with get_guard().agent_run(TRACER, "writer"):
        for _ in range(turns):
            stream = client.chat.completions.create(
                model="gpt-test",
                messages=MESSAGES,
                stream=True,
                stream_options={"include_usage": True},
            )
            texts.append("".join(c.choices[0].delta.content or "" for c in stream if c.choices))
    return texts


def test_streamed_turns_are_judged_and_stop_the_consumer_at_stop(make_loopguard):
    lg = make_loopguard(mode="enforce", max_tokens_recoveries=1, truncation_stops=True)
    api = ScriptedAPI([Turn(text="long text", finish_reason="length")] * 4)

    with pytest.raises(LoopGuardInterrupt) as stopped:
        _stream_turns(api.client(), 4)

    assert_truncated_streams_replanned_then_stopped(lg, api, stopped, output_tokens=5)


def test_streamed_tool_calls_are_reassembled_from_chunks(make_loopguard):
    lg = make_loopguard(mode="enforce", policy="strict", max_repeated_tool_steps=2)
    api = ScriptedAPI([Turn(tool_calls=[("search", {"query": "pricing", "page": 2})])] * 3)
    client = api.client()

    with pytest.raises(LoopGuardInterrupt) as stopped:
        _stream_turns(client, 3)

    assert "repeated_tool_steps" in stopped.value.decision.detectors
    assert len(api.requests) == 2
    assert lg.spans("chat ")[0].attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)


def test_stream_closed_early_ends_its_span_once_without_a_judgement(make_loopguard):
    lg = make_loopguard(mode="enforce")
    api = ScriptedAPI([Turn(text="a long answer", finish_reason="length")])
    client = api.client()

    close_a_stream_early(
        lg,
        TRACER,
        lambda: client.chat.completions.create(model="gpt-test", messages=MESSAGES, stream=True),
    )


def test_stream_dropped_half_read_ends_its_span_when_collected(make_loopguard):
    lg = make_loopguard(mode="enforce")
    api = ScriptedAPI([Turn(text="a long answer")])

    with get_guard().agent_run(TRACER, "writer"):
        stream = api.client().chat.completions.create(
            model="gpt-test", messages=MESSAGES, stream=True
        )
        next(stream)
        del stream
        gc.collect()
        assert len(lg.spans("chat ")) == 1

    assert lg.open_spans() == []


def test_stream_helper_context_manager_ends_the_span_on_early_exit(make_loopguard):
    lg = make_loopguard(mode="enforce")
    api = ScriptedAPI([Turn(text="a long answer")])

    with get_guard().agent_run(TRACER, "writer"):
        with api.client().chat.completions.stream(model="gpt-test", messages=MESSAGES) as stream:
            for _event in stream:
                break

    assert len(lg.spans("chat ")) == 1
    assert lg.open_spans() == []


def test_stream_that_breaks_mid_way_ends_its_span_with_the_error(make_loopguard):
    lg = make_loopguard(mode="enforce")

    def broken(request: http.Request) -> http.Response:
        body = (
            b'data: {"id": "x", "object": "chat.completion.chunk", "created": 1, '
            b'"model": "gpt-test", "choices": []}\n\ndata: {not json\n\n'
        )
        return http.Response(200, content=body, headers={"content-type": "text/event-stream"})

    client = ScriptedAPI([]).client()
    client._client._transport = http.MockTransport(broken)

    with pytest.raises(ValueError), get_guard().agent_run(TRACER, "writer"):
        for _chunk in client.chat.completions.create(
            model="gpt-test", messages=MESSAGES, stream=True
        ):
            pass

    (chat,) = lg.spans("chat ")
    assert chat.attributes["error.type"] == "JSONDecodeError"
    assert lg.open_spans() == []


def test_async_stream_is_judged_and_interrupts(make_loopguard):
    lg = make_loopguard(mode="enforce", max_tokens_recoveries=0, truncation_stops=True)
    api = ScriptedAPI([Turn(text="cut", finish_reason="length")] * 2)

    async def consume() -> None:
        client = api.async_client()
        with get_guard().agent_run(TRACER, "writer"):
            for _ in range(2):
                stream = await client.chat.completions.create(
                    model="gpt-test", messages=MESSAGES, stream=True
                )
                async for _chunk in stream:
                    pass

    with pytest.raises(LoopGuardInterrupt):
        asyncio.run(consume())

    assert len(api.requests) == 1
    assert lg.open_spans() == []


def test_async_non_streamed_call_makes_the_same_span(make_loopguard):
    lg = make_loopguard(mode="enforce")
    api = ScriptedAPI([Turn(text="hello", input_tokens=4, output_tokens=2)])

    async def call() -> str | None:
        client = api.async_client()
        with get_guard().agent_run(TRACER, "writer"):
            completion = await client.chat.completions.create(model="gpt-test", messages=MESSAGES)
        return completion.choices[0].message.content

    assert asyncio.run(call()) == "hello"
    (chat,) = lg.spans("chat ")
    assert chat.attributes["gen_ai.usage.input_tokens"] == 4
    assert chat.attributes["gen_ai.response.finish_reasons"] == ("stop",)
