"""Streamed answers (judged at their end, the span ended exactly once on every way out) and
``litellm.acompletion``."""

from __future__ import annotations

import asyncio
import gc

import litellm
import pytest
from agent_loop import MODEL
from conftest import TRACER
from otel_loopguard_testing import (
    assert_truncated_streams_replanned_then_stopped,
    close_a_stream_early,
)
from otel_loopguard_testing.scripted_openai import Turn

from otel_loopguard.engine.decisions import LoopGuardInterrupt
from otel_loopguard.guard import get_guard

MESSAGES = [{"role": "user", "content": "write the report"}]


def _request(api, **options):
    return {
        "model": MODEL,
        "messages": MESSAGES,
        "api_base": api.base,
        "api_key": "test-key",
        **options,
    }


def _stream_turns(api, turns: int) -> list[str]:
    """Read `turns` streamed answers inside one agent run; returns their texts."""
    texts = []
    with get_guard().agent_run(TRACER, "writer"):
        for _ in range(turns):
            stream = litellm.completion(
                **_request(api, stream=True, stream_options={"include_usage": True})
            )
            texts.append("".join(c.choices[0].delta.content or "" for c in stream if c.choices))
    return texts


def test_streamed_turns_are_judged_at_their_end_and_stop_the_reading_loop(make_loopguard, serve):
    lg = make_loopguard(mode="enforce", max_tokens_recoveries=1, truncation_stops=True)
    api = serve([Turn(text="long text", finish_reason="length", output_tokens=9)] * 4)

    with pytest.raises(LoopGuardInterrupt) as stopped:
        _stream_turns(api, 4)

    assert_truncated_streams_replanned_then_stopped(lg, api, stopped, output_tokens=9)


def test_streamed_tool_calls_are_reassembled_and_usage_counts(make_loopguard, serve):
    lg = make_loopguard(mode="enforce", policy="strict", max_repeated_tool_steps=2)
    turn = Turn(tool_calls=[("search", {"query": "pricing", "page": 2})], input_tokens=20)
    api = serve([turn] * 3)

    with pytest.raises(LoopGuardInterrupt) as stopped:
        _stream_turns(api, 3)

    assert "repeated_tool_steps" in stopped.value.decision.detectors
    assert len(api.requests) == 2
    first = lg.spans("chat ")[0]
    assert first.attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    (agent,) = lg.spans("invoke_agent")
    assert agent.attributes["gen_ai.usage.input_tokens"] == 40


def test_stream_closed_early_ends_its_span_once_without_a_judgement(make_loopguard, serve):
    lg = make_loopguard(mode="enforce", max_tokens_recoveries=0, truncation_stops=True)
    api = serve([Turn(text="a long answer", finish_reason="length")])

    close_a_stream_early(lg, TRACER, lambda: litellm.completion(**_request(api, stream=True)))


def test_stream_dropped_half_read_ends_its_span_when_collected(make_loopguard, serve):
    lg = make_loopguard(mode="enforce", max_tokens_recoveries=0, truncation_stops=True)
    api = serve([Turn(text="a long answer", finish_reason="length")])

    with get_guard().agent_run(TRACER, "writer"):
        stream = litellm.completion(**_request(api, stream=True))
        next(stream)
        del stream
        gc.collect()
        assert len(lg.spans("chat ")) == 1

    assert lg.decided == []
    lg.assert_every_span_ended_once()


def test_async_completion_is_spanned_and_counted(make_loopguard, serve):
    lg = make_loopguard(mode="enforce", token_budget=40)
    api = serve([Turn(text="hello", input_tokens=20, output_tokens=15)] * 3)

    async def calls() -> list[str]:
        answers = []
        with get_guard().agent_run(TRACER, "writer"):
            for _ in range(3):
                response = await litellm.acompletion(**_request(api, max_tokens=10))
                answers.append(response.choices[0].message.content)
        return answers

    with pytest.raises(LoopGuardInterrupt) as stopped:
        asyncio.run(calls())

    # 35 tokens used; the next call may spend 10 more -> 45 > 40: never sent
    assert len(api.requests) == 1
    assert stopped.value.decision.detectors == ("budget",)
    chats = lg.spans("chat ")
    assert len(chats) == 2  # one for each call (acompletion's inner completion is not spanned)
    assert chats[0].attributes["gen_ai.usage.input_tokens"] == 20
    assert chats[0].attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert chats[1].attributes["error.type"] == "LoopGuardInterrupt"
    lg.assert_every_span_ended_once()


def test_async_stream_is_judged_at_its_end_and_interrupts(make_loopguard, serve):
    lg = make_loopguard(mode="enforce", max_tokens_recoveries=0, truncation_stops=True)
    api = serve([Turn(text="cut", finish_reason="length")] * 2)

    async def consume() -> None:
        with get_guard().agent_run(TRACER, "writer"):
            for _ in range(2):
                stream = await litellm.acompletion(**_request(api, stream=True))
                async for _chunk in stream:
                    pass

    with pytest.raises(LoopGuardInterrupt):
        asyncio.run(consume())

    assert len(api.requests) == 1
    (chat,) = lg.spans("chat ")
    assert [e["loopguard.action"] for e in lg.decisions_on(chat)] == ["stop"]
    lg.assert_every_span_ended_once()
