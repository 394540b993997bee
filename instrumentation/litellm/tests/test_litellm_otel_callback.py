"""LiteLLM's own OpenTelemetry callback (``litellm.callbacks = ["otel"]``) beside ours.

LiteLLM's ``OpenTelemetry`` integration makes a span of its own per call after the answer
came back: in its logging worker thread (``completion``) or an asyncio task
(``acompletion``), so it ends after our ``chat`` span has ended and its model turn is
closed. With ``USE_OTEL_LITELLM_REQUEST_SPAN=true`` (LiteLLM's setting for a
``litellm_request`` span even under a current span) that span carries the answer's usage
and ``gen_ai.response.id``, and the span processor reads it as a model turn: counted once
by our wrapper and once more from LiteLLM's span, a token budget trips at half the real
usage. Each answer must count once whichever of the two reports it first, and with
LiteLLM's callback alone its spans must still count.

The callback is LiteLLM's real class, given the test pipeline's provider (its constructor's
``tracer_provider``, instead of the global provider it would look up for ``"otel"``).
"""

from __future__ import annotations

import asyncio
import time

import litellm
import pytest
from agent_loop import MODEL
from conftest import TRACER
from litellm.integrations.opentelemetry import OpenTelemetry
from opentelemetry import trace
from otel_loopguard_testing.scripted_openai import Turn

from otel_loopguard.guard import get_guard

MESSAGES = [{"role": "user", "content": "hi"}]
USAGE = (100, 10)  # per answer
CALLS = 3


@pytest.fixture
def litellm_otel(make_loopguard, monkeypatch):
    """``install(**settings)``: a fresh guard (``make_loopguard``) and LiteLLM's own
    OpenTelemetry callback on the same provider, making a ``litellm_request`` span per call."""
    monkeypatch.setenv("USE_OTEL_LITELLM_REQUEST_SPAN", "true")
    callbacks: list[OpenTelemetry] = []

    def install(**settings):
        harness = make_loopguard(**settings)
        callback = OpenTelemetry(tracer_provider=harness.provider)
        callbacks.append(callback)
        litellm.callbacks = [callback]
        return harness

    yield install
    litellm.callbacks = []
    for callback in callbacks:
        litellm.logging_callback_manager.remove_callback_from_all_lists(callback)


def _litellm_answer_spans(harness, trace_id=None):
    """LiteLLM's spans that carry an answer (its ``litellm_request`` spans), in the run's
    trace (LiteLLM's logging worker may still log a call of an earlier test, with the
    callback of this one)."""
    if trace_id is None:
        (agent,) = harness.spans("invoke_agent")
        trace_id = agent.context.trace_id
    return [
        s
        for s in harness.spans()
        if s.instrumentation_scope.name == "litellm"
        and "gen_ai.usage.input_tokens" in s.attributes
        and s.context.trace_id == trace_id
    ]


def _run_trace_id() -> int:
    return trace.get_current_span().get_span_context().trace_id


def _request(api, stream: bool) -> dict:
    request = {"model": MODEL, "messages": MESSAGES, "api_base": api.base, "api_key": "k"}
    if stream:
        request.update(stream=True, stream_options={"include_usage": True})
    return request


def _run_sync(harness, api, stream: bool) -> None:
    """CALLS calls in one agent run, each followed by LiteLLM's span for it (its logging
    thread ends it after the call returned), so the next pre-flight check sees both."""
    with get_guard().agent_run(TRACER, "assistant"):
        trace_id = _run_trace_id()
        for done in range(1, CALLS + 1):
            result = litellm.completion(**_request(api, stream))
            if stream:
                for _chunk in result:
                    pass
            _wait(lambda done=done: len(_litellm_answer_spans(harness, trace_id)) >= done)


def _run_async(harness, api, stream: bool) -> None:
    async def calls(trace_id: int) -> None:
        for done in range(1, CALLS + 1):
            result = await litellm.acompletion(**_request(api, stream))
            if stream:
                async for _chunk in result:
                    pass
            deadline = time.monotonic() + 10
            while (
                len(_litellm_answer_spans(harness, trace_id)) < done and time.monotonic() < deadline
            ):
                await asyncio.sleep(0.01)  # LiteLLM's callback task runs on this loop

    with get_guard().agent_run(TRACER, "assistant"):
        asyncio.run(calls(_run_trace_id()))


def _wait(condition, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)


RUNS = {
    "completion": lambda harness, api: _run_sync(harness, api, stream=False),
    "acompletion": lambda harness, api: _run_async(harness, api, stream=False),
    "acompletion-streamed": lambda harness, api: _run_async(harness, api, stream=True),
}


@pytest.mark.parametrize("run", sorted(RUNS))
def test_an_answer_reported_by_litellm_and_by_us_counts_once(litellm_otel, serve, run):
    # 3 answers of 110 tokens: 330 under a 400 budget; counted twice, the run stops after 2
    harness = litellm_otel(mode="enforce", token_budget=400)
    api = serve([Turn(text="ok", input_tokens=USAGE[0], output_tokens=USAGE[1])] * CALLS)

    RUNS[run](harness, api)

    assert len(api.requests) == CALLS
    litellm_answers = _litellm_answer_spans(harness)
    assert len(litellm_answers) == CALLS  # LiteLLM's callback did report every answer
    assert all(s.attributes["gen_ai.usage.input_tokens"] == USAGE[0] for s in litellm_answers)
    ours = harness.spans("chat ")
    assert len(ours) == CALLS
    (agent,) = harness.spans("invoke_agent")
    assert agent.attributes["gen_ai.usage.input_tokens"] == CALLS * USAGE[0]
    assert agent.attributes["gen_ai.usage.output_tokens"] == CALLS * USAGE[1]
    assert agent.attributes["loopguard.run.state"] == "completed"
    assert [d.action.value for d, _ in harness.decided if d.action.value != "warn"] == []


@pytest.mark.parametrize("run", ["completion", "acompletion"])
def test_with_litellm_callback_alone_its_answers_still_count(litellm_otel, serve, run):
    # nothing of ours wraps the call: the span processor alone reads LiteLLM's spans
    harness = litellm_otel(mode="observe", token_budget=250)
    harness.uninstrument()
    api = serve([Turn(text="ok", input_tokens=USAGE[0], output_tokens=USAGE[1])] * CALLS)

    RUNS[run](harness, api)

    assert harness.spans("chat ") == []
    assert len(_litellm_answer_spans(harness)) == CALLS
    (agent,) = harness.spans("invoke_agent")
    assert agent.attributes["gen_ai.usage.input_tokens"] == CALLS * USAGE[0]
    assert agent.attributes["gen_ai.usage.output_tokens"] == CALLS * USAGE[1]
    # 220 tokens after two answers, 330 after the third: over the budget once
    stops = [decision for decision, _ in harness.decided if decision.action.value == "stop"]
    assert [decision.detectors for decision in stops] == [("budget",)]


@pytest.mark.parametrize("run", ["completion", "acompletion"])
def test_a_failed_call_reported_by_litellm_and_by_us_is_one_step(litellm_otel, serve, run):
    # LiteLLM's failure span ends inside our call (no answer, no response id to pair):
    # counted twice, the third call would pass max_steps=4 and never be sent
    harness = litellm_otel(mode="enforce", max_steps=4)
    api = serve([])  # script exhausted: the API answers 500
    request = {**_request(api, stream=False), "num_retries": 0, "max_retries": 0}

    async def acall() -> None:
        await litellm.acompletion(**request)

    call = {"completion": lambda: litellm.completion(**request), "acompletion": acall}[run]
    with get_guard().agent_run(TRACER, "assistant"):
        for _ in range(CALLS):
            with pytest.raises(litellm.InternalServerError):
                result = call()
                if asyncio.iscoroutine(result):
                    asyncio.run(result)

    assert len(api.requests) == CALLS
    failures = [s for s in harness.spans() if s.instrumentation_scope.name == "litellm"]
    assert len([s for s in failures if s.attributes.get("error.type")]) == CALLS
    assert [s.attributes["error.type"] for s in harness.spans("chat ")] == [
        "InternalServerError"
    ] * CALLS
    (agent,) = harness.spans("invoke_agent")
    assert agent.attributes["loopguard.run.state"] == "completed"  # not max_steps
