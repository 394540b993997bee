"""Chat Completions through the real SDK: spans, truncation, premature end, token budget."""

from __future__ import annotations

import pytest
from agent_loop import run_chat_agent, run_loop
from conftest import TRACER
from otel_loopguard_testing import (
    assert_genai_chat_span,
    assert_run_totals,
    assert_third_request_vetoed_by_the_budget,
)
from otel_loopguard_testing.scripted_openai import ScriptedAPI, Turn, budget_turns, usage_turns

from otel_loopguard.engine.decisions import LoopGuardInterrupt


def test_chat_span_follows_the_genai_conventions(make_loopguard):
    lg = make_loopguard(mode="enforce")
    api = ScriptedAPI(
        [
            Turn(tool_calls=[("search", {"query": "pricing"})], input_tokens=12, output_tokens=7),
            Turn(text="Pricing is at /pricing.", input_tokens=30, output_tokens=9),
        ]
    )
    outcome = run_chat_agent(api.client(), TRACER, {"search": lambda query: "/pricing"})

    assert outcome.answer == "Pricing is at /pricing."
    chats = lg.spans("chat ")
    assert [span.name for span in chats] == ["chat gpt-test", "chat gpt-test"]
    assert_genai_chat_span(chats[0], provider="openai")
    attrs = chats[0].attributes
    assert attrs["server.address"] == "llm.test"
    (agent,) = lg.spans("invoke_agent")
    assert all(span.parent.span_id == agent.context.span_id for span in chats)
    # privacy: nothing of the conversation is on the span
    assert not any("pricing" in str(value) for value in attrs.values())


def test_truncation_replans_with_continuation_then_takes_the_answer_as_final(make_loopguard):
    """Truncation alone never stops a run (issue 18, point 7): after the two continuations
    the third cut answer is the end of the turn, in enforce mode too. The continuations are
    asked inside the loop's one ``create`` call (delivery), which returns the joined answer."""
    lg = make_loopguard(mode="enforce", max_tokens_recoveries=2)
    api = ScriptedAPI([Turn(text=f"part {i}", finish_reason="length") for i in range(6)])

    answer = run_loop(api.client())

    actions = [decision.action.value for decision, _ in lg.decided]
    assert actions == ["replan", "replan", "warn"]
    recommendation = lg.decided[0][0].recommendation
    assert recommendation and "continue" in recommendation.lower()
    # each continuation request: the loop's request, the answer so far, the prompt once
    assert [m["content"] for m in api.requests[2]["messages"][-2:]] == [
        "part 0part 1",
        recommendation,
    ]
    assert answer.choices[0].message.content == "part 0part 1part 2"
    assert len(api.requests) == 3
    chats = lg.spans("chat ")
    events = [lg.decisions_on(span) for span in chats]
    assert [e[0]["loopguard.action"] for e in events] == ["replan", "replan", "warn"]
    assert events[0][0]["loopguard.recommendation"] == recommendation
    (agent,) = lg.spans("invoke_agent")
    assert agent.attributes["loopguard.run.state"] == "completed"


def test_truncation_stops_after_recoveries_when_asked_to(make_loopguard):
    lg = make_loopguard(mode="enforce", max_tokens_recoveries=2, truncation_stops=True)
    api = ScriptedAPI([Turn(text=f"part {i}", finish_reason="length") for i in range(6)])

    with pytest.raises(LoopGuardInterrupt) as stopped:
        run_chat_agent(api.client(), TRACER, {})

    assert [decision.action.value for decision, _ in lg.decided] == ["replan", "replan", "stop"]
    assert "truncation" in stopped.value.decision.detectors
    assert len(api.requests) == 3  # no request after the STOP


def test_truncation_in_observe_mode_records_but_never_raises(make_loopguard):
    lg = make_loopguard(mode="observe", max_tokens_recoveries=2)
    cut = [Turn(text=f"cut {i}", finish_reason="length") for i in range(4)]
    api = ScriptedAPI([*cut, Turn(text="done")])

    outcome = run_chat_agent(api.client(), TRACER, {})

    # the loop injected the two continuations, then took the third cut answer as final
    assert outcome.answer == "cut 2"
    assert len(outcome.injected) == 2
    assert len(api.requests) == 3
    third = lg.spans("chat ")[2]
    assert [e["loopguard.action"] for e in lg.decisions_on(third)] == ["warn"]
    (agent,) = lg.spans("invoke_agent")
    assert agent.attributes["loopguard.run.state"] == "completed"


def test_empty_end_of_turn_after_failing_tool_replans(make_loopguard):
    """The empty give-up is asked again inside ``create`` with the re-prompt delivered: the
    loop gets the explanation."""
    lg = make_loopguard(mode="enforce")
    api = ScriptedAPI(
        [
            Turn(tool_calls=[("fetch", {"url": "https://example.test/pricing"})]),
            Turn(text=""),  # gives up silently
            Turn(text="I could not open the page: access is forbidden."),
        ]
    )
    answer = run_loop(api.client())

    assert answer.choices[0].message.content == "I could not open the page: access is forbidden."
    replans = [d for d, _ in lg.decided if d.action.value == "replan"]
    assert [d.detectors for d in replans] == [("premature_end",)]
    assert api.requests[2]["messages"][-1] == {
        "role": "user",
        "content": replans[0].recommendation,
    }
    second_chat = lg.spans("chat ")[1]
    (event,) = lg.decisions_on(second_chat)
    assert event["loopguard.action"] == "replan"
    assert event["loopguard.detectors"] == ("premature_end",)


def test_token_budget_stops_before_the_request_that_would_exceed_it(make_loopguard):
    lg = make_loopguard(mode="enforce", token_budget=45)
    api = ScriptedAPI(budget_turns())

    with pytest.raises(LoopGuardInterrupt) as stopped:
        run_chat_agent(api.client(), TRACER, {"search": lambda query: query}, max_tokens=8)

    assert_third_request_vetoed_by_the_budget(lg, api, stopped)


def test_token_totals_on_the_agent_span_match_the_usage_sum(make_loopguard):
    lg = make_loopguard(mode="enforce")
    usage = [(11, 3), (17, 4), (25, 6)]
    api = ScriptedAPI(usage_turns(usage))
    run_chat_agent(api.client(), TRACER, {"search": lambda query: f"result {query}"})

    assert_run_totals(lg, usage, "completed")


def test_repeated_identical_tool_steps_are_seen_from_the_model_answers(make_loopguard):
    lg = make_loopguard(mode="enforce", policy="strict", max_repeated_tool_steps=3)
    api = ScriptedAPI([Turn(tool_calls=[("search", {"query": "pricing"})])] * 6)
    executions = []

    def search(query: str) -> str:
        executions.append(query)
        return f"page {len(executions)}"  # changing output: only the steps repeat

    with pytest.raises(LoopGuardInterrupt) as stopped:
        run_chat_agent(api.client(), TRACER, {"search": search})

    assert "repeated_tool_steps" in stopped.value.decision.detectors
    assert len(executions) <= 2
    assert len(api.requests) == 3
    third = lg.spans("chat ")[2]
    assert [e["loopguard.action"] for e in lg.decisions_on(third)] == ["stop"]
