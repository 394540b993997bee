"""Our own failures never reach the program, and the ways programs get hold of
``completion`` are all covered."""

from __future__ import annotations

import asyncio

import litellm
import pytest
from agent_loop import MODEL
from conftest import TRACER
from litellm.types.utils import ModelResponse
from otel_loopguard_testing import unreadable_by
from otel_loopguard_testing.scripted_openai import Turn

from otel_loopguard.engine.decisions import LoopGuardInterrupt
from otel_loopguard.guard import get_guard

MESSAGES = [{"role": "user", "content": "hi"}]
_OUR_READERS = ("otel_loopguard_litellm", "otel_loopguard.kit.openai_format")


class _Unreadable(
    unreadable_by(_OUR_READERS, "choices", "an answer shape we do not know"), ModelResponse
):
    """A ``ModelResponse`` whose ``choices`` this package cannot read (LiteLLM and the
    program can): the stand-in for an answer shape we do not know yet. Our reader of the
    OpenAI shape is the core's ``openai_format``, shared with the OpenAI package."""


def test_an_answer_we_cannot_read_is_still_returned_and_counted(make_loopguard):
    lg = make_loopguard(mode="enforce")
    odd = _Unreadable(model="gpt-test")

    with get_guard().agent_run(TRACER, "assistant"):
        response = litellm.completion(model=MODEL, messages=MESSAGES, mock_response=odd)

    assert response is odd
    (chat,) = lg.spans("chat ")
    assert "error.type" not in chat.attributes
    # counted in loopguard.internal_errors and logged once, by the guard's telemetry
    logged = [r.getMessage() for r in lg.caplog.records]
    assert any("internal error in litellm.parse" in message for message in logged)
    lg.assert_every_span_ended_once()


def test_a_name_bound_after_instrumenting_and_the_main_module_are_covered(make_loopguard, serve):
    # Google ADK: ``from litellm import acompletion``; older code: ``litellm.main.completion``
    from litellm import completion
    from litellm.main import completion as main_completion

    lg = make_loopguard(mode="enforce", max_steps=1)
    api = serve([Turn(text="one"), Turn(text="two")])
    request = {"model": MODEL, "messages": MESSAGES, "api_base": api.base, "api_key": "k"}

    with get_guard().agent_run(TRACER, "assistant"):
        assert completion(**request).choices[0].message.content == "one"
        with pytest.raises(LoopGuardInterrupt):
            main_completion(**request)

    assert len(api.requests) == 1
    assert [s.name for s in lg.spans("chat ")] == ["chat gpt-test", "chat gpt-test"]


def test_mock_responses_are_judged_like_real_ones(make_loopguard):
    # framework test suites run LiteLLM on ``mock_response``: the answers still count
    lg = make_loopguard(mode="enforce", max_tokens_recoveries=0, truncation_stops=True)

    with get_guard().agent_run(TRACER, "assistant"):
        litellm.completion(model=MODEL, messages=MESSAGES, mock_response="done")
        with pytest.raises(LoopGuardInterrupt) as stopped:
            litellm.completion(
                model=MODEL,
                messages=MESSAGES,
                mock_response=ModelResponse(
                    model="gpt-test",
                    choices=[{"index": 0, "finish_reason": "length", "message": {"content": "c"}}],
                ),
            )

    assert "truncation" in stopped.value.decision.detectors
    first = lg.spans("chat ")[0]
    assert first.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert first.attributes["gen_ai.usage.output_tokens"] > 0


def test_router_calls_are_covered(make_loopguard, serve):
    # LiteLLM's Router (load balancing, fallbacks) reaches the model through the same
    # entry points, sync and async: each call is spanned and budgeted once
    lg = make_loopguard(mode="enforce", token_budget=90)
    api = serve([Turn(text="a", input_tokens=30, output_tokens=10)] * 3)
    deployment = {"model": MODEL, "api_base": api.base, "api_key": "k"}
    router = litellm.Router(model_list=[{"model_name": "main", "litellm_params": deployment}])

    async def second() -> None:
        await router.acompletion(model="main", messages=MESSAGES, max_tokens=10)

    with get_guard().agent_run(TRACER, "assistant"):
        router.completion(model="main", messages=MESSAGES, max_tokens=10)
        asyncio.run(second())
        with pytest.raises(LoopGuardInterrupt):  # 80 used, 11 more may come: 91 > 90
            router.completion(model="main", messages=MESSAGES, max_tokens=11)

    assert len(api.requests) == 2
    (run,) = lg.spans("invoke_agent")
    assert run.attributes["gen_ai.usage.input_tokens"] == 60
    assert [s.attributes.get("error.type") for s in lg.spans("chat ")] == [
        None,
        None,
        "LoopGuardInterrupt",
    ]
