"""Our openai package beside Logfire's OpenAI instrumentation, in both instrumentation orders
(theirs first: ``beside_ours``; ours first: ``ours_inside``), enforce mode: the looping run
is interrupted within four executions, the productive one completes with its real steps and
tokens, and a request our pre-flight refused (never sent) is no step (issue 29, point 9)."""

from __future__ import annotations

import asyncio
import itertools

import pytest
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.compat_checks import (
    assert_interrupted,
    assert_refused_request_is_no_step,
)
from otel_loopguard_testing.scripted_openai import ScriptedAPI, Turn, usage_turns
from otel_loopguard_testing.third_party import ORDERS, installed_in_order
from test_core_only import TOTALS, USAGE, looping_start, run_loop, run_usage

from otel_loopguard import LoopGuardInterrupt
from otel_loopguard.guard import get_guard

_CONVERSATIONS = itertools.count(1)


@pytest.mark.parametrize("order", list(ORDERS))
def test_a_productive_run_completes_with_its_real_steps_and_tokens(request, order) -> None:
    harness = installed_in_order(request, order, max_steps=len(USAGE))
    count = metric_counter(harness)
    api = ScriptedAPI(usage_turns(USAGE))
    outcome = run_loop(harness, api, {"search": lambda query: f"result {query}"})
    assert outcome.answer == "answer"
    assert len(api.requests) == len(USAGE)
    (agent,) = harness.spans("invoke_agent")
    assert agent.attributes["loopguard.run.state"] == "completed"
    assert run_usage(harness) == TOTALS
    assert not harness.decision_events("stop")
    assert count("loopguard.internal_errors") == 0
    assert harness.open_spans() == []


@pytest.mark.parametrize("order", list(ORDERS))
def test_a_looping_run_is_interrupted_within_four_executions(request, order) -> None:
    harness = installed_in_order(request, order)
    assert_interrupted(harness, looping_start(harness), invocations=2)


@pytest.mark.parametrize("order", list(ORDERS))
def test_a_refused_request_is_no_step(request, order) -> None:
    """A step limit one short of the productive run: its last request is refused before it
    is sent; the run has the steps and tokens of the answers that came, not one more step
    for the request that never left."""
    harness = installed_in_order(request, order, max_steps=len(USAGE) - 1)
    api = ScriptedAPI(usage_turns(USAGE))
    conversation = f"refused-{next(_CONVERSATIONS)}"
    tools = {"search": lambda query: f"result {query}"}
    with pytest.raises(LoopGuardInterrupt):
        run_loop(harness, api, tools, conversation_id=conversation)
    assert len(api.requests) == len(USAGE) - 1  # the last was never sent
    came = USAGE[:-1]
    usage = (sum(u[0] for u in came), sum(u[1] for u in came))
    assert_refused_request_is_no_step(harness, conversation, len(came), usage)


@pytest.mark.parametrize("client", ["sync", "async"])
@pytest.mark.parametrize("order", list(ORDERS))
def test_streamed_answers_through_both_wrappers_are_untouched(request, order, client) -> None:
    """Streamed answers (an iterable each wrapper wraps: Logfire's stream proxy and ours):
    nothing raises into the caller, sync or async, the texts are whole, each answer one
    step with its usage."""
    harness = installed_in_order(request, order)
    count = metric_counter(harness)
    api = ScriptedAPI([Turn(text="the report", input_tokens=12, output_tokens=4)] * 2)
    request_body = {
        "model": "gpt-test",
        "messages": [{"role": "user", "content": "write the report"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }

    def text_of(chunks: list) -> str:
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)

    async def streamed() -> list[str]:
        openai = api.async_client()
        texts = []
        with get_guard().agent_run(harness.app_tracer(), "writer"):
            for _ in range(2):
                stream = await openai.chat.completions.create(**request_body)
                texts.append(text_of([chunk async for chunk in stream]))
        return texts

    if client == "async":
        texts = asyncio.run(streamed())
    else:
        openai = api.client()
        with get_guard().agent_run(harness.app_tracer(), "writer"):
            texts = [
                text_of(list(openai.chat.completions.create(**request_body))) for _ in range(2)
            ]
    assert texts == ["the report", "the report"]
    (agent,) = harness.spans("invoke_agent")
    assert agent.attributes["loopguard.run.state"] == "completed"
    usage = (
        agent.attributes["gen_ai.usage.input_tokens"],
        agent.attributes["gen_ai.usage.output_tokens"],
    )
    assert usage == (24, 8)
    assert count("loopguard.internal_errors") == 0
    assert harness.open_spans() == []
