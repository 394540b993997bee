"""``litellm.responses`` / ``aresponses`` (LiteLLM's Responses API): the same span, checks and
judgement as chat completions, read from the Responses shape."""

from __future__ import annotations

import asyncio
from typing import Any

import litellm
import pytest
from agent_loop import MODEL
from conftest import TRACER
from otel_loopguard_testing.scripted_openai import Turn

from otel_loopguard.engine.decisions import LoopGuardInterrupt
from otel_loopguard.guard import get_guard


def _request(api, **options):
    return {"model": MODEL, "input": "summarise", "api_base": api.base, "api_key": "k", **options}


def test_responses_are_spanned_and_budgeted_before_the_request(make_loopguard, serve):
    lg = make_loopguard(mode="enforce", token_budget=60)
    api = serve([Turn(text="part", input_tokens=20, output_tokens=5)] * 4)

    with get_guard().agent_run(TRACER, "writer"):
        with pytest.raises(LoopGuardInterrupt) as stopped:
            for _ in range(4):
                litellm.responses(**_request(api, max_output_tokens=16))

    # 2 calls used 50 tokens; the third may spend 16 more -> 66 > 60: never sent
    assert len(api.requests) == 2
    assert all(request["path"] == "/v1/responses" for request in api.requests)
    assert stopped.value.decision.detectors == ("budget",)
    first, _, vetoed = lg.spans("chat ")
    assert first.attributes["gen_ai.operation.name"] == "chat"
    assert first.attributes["gen_ai.provider.name"] == "openai"
    assert first.attributes["gen_ai.request.max_tokens"] == 16
    assert first.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert (
        first.attributes["gen_ai.usage.input_tokens"],
        first.attributes["gen_ai.usage.output_tokens"],
    ) == (20, 5)
    assert vetoed.attributes["error.type"] == "LoopGuardInterrupt"
    lg.assert_every_span_ended_once()


def _three_responses_stopped(api: Any) -> Any:
    """Three ``litellm.responses`` calls in one run, which the guard stops: the
    ``pytest.raises`` info of its interrupt."""
    with get_guard().agent_run(TRACER, "writer"):
        with pytest.raises(LoopGuardInterrupt) as stopped:
            for _ in range(3):
                litellm.responses(**_request(api))
    return stopped


def test_incomplete_responses_replan_then_stop(make_loopguard, serve):
    lg = make_loopguard(mode="enforce", max_tokens_recoveries=1, truncation_stops=True)
    api = serve([Turn(text="cut", finish_reason="length")] * 3)

    stopped = _three_responses_stopped(api)

    assert "truncation" in stopped.value.decision.detectors
    assert len(api.requests) == 2
    assert [d.action.value for d, _ in lg.decided] == ["replan", "stop"]
    assert lg.spans("chat ")[0].attributes["gen_ai.response.finish_reasons"] == ("length",)


def test_repeated_function_calls_stop_under_the_strict_policy(make_loopguard, serve):
    lg = make_loopguard(mode="enforce", policy="strict", max_repeated_tool_steps=2)
    api = serve([Turn(tool_calls=[("search", {"query": "pricing"})])] * 3)

    stopped = _three_responses_stopped(api)

    assert "repeated_tool_steps" in stopped.value.decision.detectors
    assert len(api.requests) == 2
    assert lg.spans("chat ")[0].attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)


def test_streamed_and_async_responses_are_judged_at_their_end(make_loopguard, serve):
    lg = make_loopguard(mode="enforce", max_tokens_recoveries=0, truncation_stops=True)
    api = serve([Turn(text="cut", finish_reason="length")] * 2)

    async def read() -> None:
        with get_guard().agent_run(TRACER, "writer"):
            for _ in range(2):
                stream = await litellm.aresponses(**_request(api, stream=True))
                async for _event in stream:
                    pass

    with pytest.raises(LoopGuardInterrupt) as stopped:
        asyncio.run(read())

    assert "truncation" in stopped.value.decision.detectors
    assert len(api.requests) == 1
    (chat,) = lg.spans("chat ")
    assert chat.attributes["gen_ai.response.finish_reasons"] == ("length",)
    assert [e["loopguard.action"] for e in lg.decisions_on(chat)] == ["stop"]
    lg.assert_every_span_ended_once()


def test_sync_responses_stream_is_judged_at_its_end(make_loopguard, serve):
    lg = make_loopguard(mode="enforce", max_tokens_recoveries=0, truncation_stops=True)
    api = serve([Turn(text="cut", finish_reason="length")] * 2)

    with get_guard().agent_run(TRACER, "writer"):
        with pytest.raises(LoopGuardInterrupt):
            for _ in range(2):
                for _event in litellm.responses(**_request(api, stream=True)):
                    pass

    assert len(api.requests) == 1
    (chat,) = lg.spans("chat ")
    assert [e["loopguard.action"] for e in lg.decisions_on(chat)] == ["stop"]
    lg.assert_every_span_ended_once()
