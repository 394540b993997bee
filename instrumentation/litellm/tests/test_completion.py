"""``litellm.completion`` in a hand-written agent loop: spans, budgets, steps, truncation,
repeated tool steps, all from the answers of a real LiteLLM talking to a scripted API."""

from __future__ import annotations

import litellm
import pytest
from agent_loop import MODEL, run_agent
from conftest import TRACER
from otel_loopguard_testing import (
    assert_genai_chat_span,
    assert_run_totals,
    assert_third_request_vetoed_by_the_budget,
)
from otel_loopguard_testing.scripted_openai import Turn, budget_turns, usage_turns

from otel_loopguard.engine.decisions import LoopGuardInterrupt
from otel_loopguard.guard import get_guard


def test_chat_span_follows_the_genai_conventions(make_loopguard, serve):
    lg = make_loopguard(mode="enforce")
    api = serve(
        [
            Turn(tool_calls=[("search", {"query": "pricing"})], input_tokens=12, output_tokens=7),
            Turn(text="Pricing is at /pricing.", input_tokens=30, output_tokens=9),
        ]
    )
    outcome = run_agent(api.base, TRACER, {"search": lambda query: "/pricing"}, max_tokens=64)

    assert outcome.answer == "Pricing is at /pricing."
    chats = lg.spans("chat ")
    assert [span.name for span in chats] == ["chat gpt-test", "chat gpt-test"]
    assert_genai_chat_span(chats[0], provider="openai")  # LiteLLM's resolution of openai/...
    attrs = chats[0].attributes
    assert attrs["gen_ai.request.max_tokens"] == 64
    assert chats[1].attributes["gen_ai.response.finish_reasons"] == ("stop",)
    (agent,) = lg.spans("invoke_agent")
    assert all(span.parent.span_id == agent.context.span_id for span in chats)
    # privacy: nothing of the conversation is on the span
    assert not any("pricing" in str(value).lower() for value in attrs.values())
    lg.assert_every_span_ended_once()


def test_token_budget_stops_before_the_request_that_would_exceed_it(make_loopguard, serve):
    lg = make_loopguard(mode="enforce", token_budget=45)
    api = serve(budget_turns())

    with pytest.raises(LoopGuardInterrupt) as stopped:
        run_agent(api.base, TRACER, {"search": lambda query: query}, max_tokens=8)

    assert_third_request_vetoed_by_the_budget(lg, api, stopped)


def test_max_steps_stops_the_model_call_past_the_limit(make_loopguard, serve):
    lg = make_loopguard(mode="enforce", max_steps=3)
    api = serve([Turn(tool_calls=[("search", {"query": f"q{i}"})]) for i in range(6)])

    with pytest.raises(LoopGuardInterrupt) as stopped:
        run_agent(api.base, TRACER, {"search": lambda query: query})

    assert len(api.requests) == 3
    assert stopped.value.decision.end_state.value == "max_steps"
    (agent,) = lg.spans("invoke_agent")
    assert agent.attributes["loopguard.run.state"] == "max_steps"


def test_truncation_replans_with_continuation_then_stops_after_recoveries(make_loopguard, serve):
    lg = make_loopguard(mode="enforce", max_tokens_recoveries=2, truncation_stops=True)
    api = serve([Turn(text=f"part {i}", finish_reason="length") for i in range(6)])

    with pytest.raises(LoopGuardInterrupt) as stopped:
        run_agent(api.base, TRACER, {})

    actions = [decision.action.value for decision, _ in lg.decided]
    assert actions == ["replan", "replan", "stop"]
    recommendation = lg.decided[0][0].recommendation
    assert recommendation and "continue" in recommendation.lower()
    # each continuation was asked inside the loop's one ``completion`` call (delivery): the
    # loop's request, the answer so far, the continuation prompt once
    assert [m["content"] for m in api.requests[2]["messages"][1:]] == [
        "part 0part 1",
        recommendation,
    ]
    assert "truncation" in stopped.value.decision.detectors
    assert len(api.requests) == 3  # no request after the STOP
    chats = lg.spans("chat ")
    assert [lg.decisions_on(span)[0]["loopguard.action"] for span in chats] == [
        "replan",
        "replan",
        "stop",
    ]


def test_repeated_identical_tool_call_sets_stop_under_the_strict_policy(make_loopguard, serve):
    lg = make_loopguard(mode="enforce", policy="strict", max_repeated_tool_steps=3)
    # the same set of two calls each time, the model listing them in another order
    turns = [
        Turn(tool_calls=[("search", {"query": "pricing"}), ("fetch", {"url": "/pricing"})]),
        Turn(tool_calls=[("fetch", {"url": "/pricing"}), ("search", {"query": "pricing"})]),
    ] * 3
    api = serve(turns)
    executions = []

    def search(query: str) -> str:
        executions.append(query)
        return f"page {len(executions)}"  # changing output: only the steps repeat

    with pytest.raises(LoopGuardInterrupt) as stopped:
        run_agent(api.base, TRACER, {"search": search, "fetch": lambda url: f"got {url}"})

    assert "repeated_tool_steps" in stopped.value.decision.detectors
    assert len(api.requests) == 3
    third = lg.spans("chat ")[2]
    assert [e["loopguard.action"] for e in lg.decisions_on(third)] == ["stop"]


def test_token_totals_on_the_agent_span_match_the_usage_sum(make_loopguard, serve):
    lg = make_loopguard(mode="enforce")
    usage = [(11, 3), (17, 4), (25, 6)]
    api = serve(usage_turns(usage))
    run_agent(api.base, TRACER, {"search": lambda query: f"result {query}"})

    assert_run_totals(lg, usage, "completed")


def test_observe_mode_records_the_stop_but_never_raises(make_loopguard, serve):
    lg = make_loopguard(mode="observe", token_budget=25)
    api = serve([Turn(tool_calls=[("search", {"query": f"q{i}"})]) for i in range(3)])

    outcome = run_agent(api.base, TRACER, {"search": lambda query: query}, max_turns=3)

    assert outcome.turns == 3 and len(api.requests) == 3
    assert any(d.action.value == "stop" for d, _ in lg.decided)
    assert lg.decision_events("stop")


def test_positional_model_and_a_provider_error_end_the_span_with_the_error(make_loopguard, serve):
    lg = make_loopguard(mode="enforce")
    api = serve([])  # script exhausted: the API answers 500

    with get_guard().agent_run(TRACER, "assistant"), pytest.raises(litellm.InternalServerError):
        litellm.completion(
            MODEL,
            [{"role": "user", "content": "hi"}],
            api_base=api.base,
            api_key="test-key",
            num_retries=0,
            max_retries=0,
        )

    (chat,) = lg.spans("chat ")
    assert chat.name == "chat gpt-test"
    assert chat.attributes["error.type"]
    assert lg.decided == []
    lg.assert_every_span_ended_once()
