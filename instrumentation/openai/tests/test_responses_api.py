"""The Responses API: the same spans and judgements as Chat Completions."""

from __future__ import annotations

import asyncio

import pytest
from conftest import TRACER
from otel_loopguard_testing.scripted_openai import ScriptedAPI, Turn

from otel_loopguard.engine.decisions import LoopGuardInterrupt
from otel_loopguard.guard import get_guard


def test_response_with_function_call_makes_a_chat_span(make_loopguard):
    lg = make_loopguard(mode="enforce")
    api = ScriptedAPI([Turn(tool_calls=[("search", {"query": "pricing"})], input_tokens=9)])

    with get_guard().agent_run(TRACER, "assistant"):
        response = api.client().responses.create(model="gpt-test", input="find pricing")

    assert response.output[0].name == "search"
    (chat,) = lg.spans("chat ")
    assert chat.attributes["gen_ai.response.id"] == "resp_1"
    assert chat.attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert chat.attributes["gen_ai.usage.input_tokens"] == 9
    assert api.requests[0]["path"].endswith("/responses")


def test_incomplete_responses_count_as_truncations(make_loopguard):
    lg = make_loopguard(mode="enforce", max_tokens_recoveries=1, truncation_stops=True)
    api = ScriptedAPI([Turn(text="cut", finish_reason="length")] * 3)
    client = api.client()

    with pytest.raises(LoopGuardInterrupt), get_guard().agent_run(TRACER, "assistant"):
        for _ in range(3):
            client.responses.create(model="gpt-test", input="write", max_output_tokens=16)

    assert [d.action.value for d, _ in lg.decided] == ["replan", "stop"]
    assert lg.spans("chat ")[0].attributes["gen_ai.response.finish_reasons"] == ("length",)
    assert lg.spans("chat ")[0].attributes["gen_ai.request.max_tokens"] == 16
    assert len(api.requests) == 2


def test_streamed_response_is_judged_from_its_terminal_event(make_loopguard):
    lg = make_loopguard(mode="enforce")
    api = ScriptedAPI([Turn(text="hello there", input_tokens=7, output_tokens=3)])

    with get_guard().agent_run(TRACER, "assistant"):
        with api.client().responses.stream(model="gpt-test", input="hi") as stream:
            final = stream.get_final_response()

    assert final.output_text == "hello there"
    (chat,) = lg.spans("chat ")
    assert chat.attributes["gen_ai.usage.output_tokens"] == 3
    assert chat.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert lg.open_spans() == []


def test_async_streamed_response(make_loopguard):
    lg = make_loopguard(mode="enforce")
    api = ScriptedAPI([Turn(tool_calls=[("fetch", {"url": "u"})], output_tokens=4)])

    async def call() -> list[str]:
        client = api.async_client()
        with get_guard().agent_run(TRACER, "assistant"):
            stream = await client.responses.create(model="gpt-test", input="x", stream=True)
            return [event.type async for event in stream]

    types = asyncio.run(call())
    assert types[-1] == "response.completed"
    (chat,) = lg.spans("chat ")
    assert chat.attributes["gen_ai.usage.output_tokens"] == 4
    assert chat.attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)


def test_raw_response_calls_are_judged_and_the_caller_parses_the_same_answer(make_loopguard):
    """CrewAI's OpenAI provider calls ``with_raw_response``: the answer counts like any
    other (usage on the span and the run), and the caller's ``parse()`` is the cached one."""
    lg = make_loopguard(mode="enforce", token_budget=1000)
    api = ScriptedAPI([Turn(text="hello", input_tokens=12, output_tokens=3)])

    with get_guard().agent_run(TRACER, "assistant"):
        raw = api.client().chat.completions.with_raw_response.create(
            model="gpt-test", messages=[{"role": "user", "content": "x"}]
        )
        parsed = raw.parse()
        assert parsed.choices[0].message.content == "hello"
        assert raw.parse() is parsed
        assert get_guard().current_run_steps() == 1

    (chat,) = lg.spans("chat ")
    assert chat.attributes["gen_ai.request.model"] == "gpt-test"
    assert chat.attributes["gen_ai.usage.input_tokens"] == 12
    (run,) = lg.spans("invoke_agent assistant")
    assert run.attributes["gen_ai.usage.input_tokens"] == 12
    assert run.attributes["gen_ai.usage.output_tokens"] == 3


def test_a_streamed_raw_response_gets_a_span_but_no_judgement(make_loopguard):
    """Its body is not read yet, and it is the caller's to read."""
    lg = make_loopguard(mode="enforce")
    api = ScriptedAPI([Turn(text="hello")])

    with get_guard().agent_run(TRACER, "assistant"):
        raw = api.client().chat.completions.with_raw_response.create(
            model="gpt-test", messages=[{"role": "user", "content": "x"}], stream=True
        )
        text = "".join(
            chunk.choices[0].delta.content or "" for chunk in raw.parse() if chunk.choices
        )
        assert text == "hello"

    (chat,) = lg.spans("chat ")
    assert "gen_ai.usage.output_tokens" not in chat.attributes
    assert lg.decided == []
