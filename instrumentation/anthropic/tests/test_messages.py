"""The Anthropic SDK under the instrumentation: a hand-written tool-use agent, offline."""

from __future__ import annotations

import pytest
from agents import (
    MODEL,
    ToolBox,
    gives_up_silently,
    looping,
    productive,
    run_agent,
    run_agent_async,
    truncating,
)
from scripted_api import ScriptedMessagesAPI

from otel_loopguard import LoopGuardInterrupt

MAX_EXECUTIONS = 4


def chat_spans(harness):
    return [s for s in harness.spans() if s.attributes.get("gen_ai.operation.name") == "chat"]


@pytest.mark.parametrize("sdk_tracing", [True, False], ids=["sdk-spans", "own-spans"])
@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_looping_agent_is_stopped_in_enforce_mode(make_loopguard, sdk_tracing, stream):
    guard = make_loopguard(mode="enforce")
    api = ScriptedMessagesAPI(looping())
    tools = ToolBox()

    with pytest.raises(LoopGuardInterrupt) as raised:
        run_agent(api.client(sdk_tracing=sdk_tracing), tools, stream=stream)

    assert raised.value.decision.action.value == "stop"
    assert 1 <= tools["search"] <= MAX_EXECUTIONS
    (agent,) = guard.agent_spans()
    assert agent.attributes["loopguard.run.state"] == "stopped"
    chats = chat_spans(guard)
    assert len(chats) == len(api.requests), "one chat span per request, never two"
    if sdk_tracing:
        assert all(s.instrumentation_scope.name == "com.anthropic.sdk.python" for s in chats)
        # marked for the processor while open, forgotten once ended: nothing piles up
        assert not any(guard.guard.is_managed(s.context.span_id) for s in chats)
    else:
        assert all(s.name == "chat claude-sonnet-5-5" for s in chats)
    guard.assert_every_span_ended_once()


async def test_looping_agent_is_stopped_with_the_async_client(make_loopguard):
    guard = make_loopguard(mode="enforce")
    api = ScriptedMessagesAPI(looping())
    tools = ToolBox()

    with pytest.raises(LoopGuardInterrupt):
        await run_agent_async(api.async_client(sdk_tracing=False), tools, stream=True)

    assert 1 <= tools["search"] <= MAX_EXECUTIONS
    (agent,) = guard.agent_spans()
    assert agent.attributes["loopguard.run.state"] == "stopped"
    guard.assert_every_span_ended_once()


def test_observe_mode_changes_nothing(make_loopguard):
    baseline_tools = ToolBox()
    baseline = run_agent(ScriptedMessagesAPI(looping(give_up_after=8)).client(), baseline_tools)

    guard = make_loopguard(mode="observe")
    tools = ToolBox()
    result = run_agent(ScriptedMessagesAPI(looping(give_up_after=8)).client(), tools)

    assert result == baseline
    assert tools["search"] == baseline_tools["search"] == 8
    assert any(d.action.value == "stop" for d, _ in guard.decided)
    guard.assert_every_span_ended_once()


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_productive_agent_is_untouched_in_enforce_mode(make_loopguard, stream):
    baseline = run_agent(ScriptedMessagesAPI(productive()).client(), ToolBox(), stream=stream)

    guard = make_loopguard(mode="enforce")
    tools = ToolBox()
    result = run_agent(ScriptedMessagesAPI(productive()).client(), tools, stream=stream)

    assert result == baseline
    assert result.answer.startswith("Answer: Pro plan costs 20 EUR per month")
    assert tools.calls == {"lookup": 3}
    assert not [d for d, _ in guard.decided if d.action.value == "stop"]
    (agent,) = guard.agent_spans()
    assert agent.attributes["loopguard.run.state"] == "completed"


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_token_totals_on_the_agent_span_match_the_usage(make_loopguard, stream):
    guard = make_loopguard(mode="enforce")
    api = ScriptedMessagesAPI(productive())
    run_agent(api.client(), ToolBox(), stream=stream)

    (agent,) = guard.agent_spans()
    assert len(api.requests) == 4
    assert agent.attributes["gen_ai.usage.input_tokens"] == 4 * 100
    assert agent.attributes["gen_ai.usage.output_tokens"] == 4 * 20


def test_own_chat_span_follows_the_genai_conventions(make_loopguard):
    guard = make_loopguard(mode="enforce")
    run_agent(ScriptedMessagesAPI(productive()).client(sdk_tracing=False), ToolBox())

    (agent,) = guard.agent_spans()
    chats = chat_spans(guard)
    assert len(chats) == 4
    for span in chats:
        assert span.name == "chat claude-sonnet-5-5"
        assert span.kind.name == "CLIENT"
        assert span.attributes["gen_ai.provider.name"] == "anthropic"
        assert span.attributes["gen_ai.request.model"] == "claude-sonnet-5-5"
        assert span.attributes["gen_ai.request.max_tokens"] == 1024
        assert span.attributes["gen_ai.usage.input_tokens"] == 100
        assert span.attributes["gen_ai.usage.output_tokens"] == 20
        assert span.attributes["gen_ai.response.id"].startswith("msg_")
        assert span.parent.span_id == agent.context.span_id
    reasons = [tuple(s.attributes["gen_ai.response.finish_reasons"]) for s in chats]
    assert reasons == [("tool_use",)] * 3 + [("end_turn",)]


def test_token_budget_stops_before_the_request_that_would_exceed_it(make_loopguard):
    # each turn: 100 input + 20 output tokens. After two turns 240 are used; a third
    # request needs at least the 100 input tokens the last one had: 340 > 300.
    guard = make_loopguard(mode="enforce", token_budget=300)
    api = ScriptedMessagesAPI(productive())

    with pytest.raises(LoopGuardInterrupt) as raised:
        run_agent(api.client(), ToolBox())

    assert len(api.requests) == 2, "the third request never reached the transport"
    assert raised.value.decision.end_state.value == "budget_exceeded"
    (agent,) = guard.agent_spans()
    assert agent.attributes["loopguard.run.state"] == "budget_exceeded"
    assert agent.attributes["gen_ai.usage.input_tokens"] == 200


def test_max_tokens_turns_get_the_continuation_then_stop(make_loopguard):
    guard = make_loopguard(mode="enforce", max_tokens_recoveries=2, truncation_stops=True)
    api = ScriptedMessagesAPI(truncating())

    with pytest.raises(LoopGuardInterrupt) as raised:
        run_agent(api.client(), ToolBox())

    replans = [d for d, _ in guard.decided if d.action.value == "replan"]
    assert len(replans) == 2
    assert all("truncation" in d.detectors for d in replans)
    assert all("cut off" in d.recommendation for d in replans)
    assert "truncation" in raised.value.decision.detectors
    assert len(api.requests) == 3, "two continuations, then the third truncation stops"


def test_empty_end_turn_after_a_failed_tool_is_a_premature_end(make_loopguard):
    # delivery off: the replan is recorded and the turn ends (the re-prompt and its re-ask
    # are in test_recommendations.py)
    guard = make_loopguard(mode="enforce", deliver_recommendations=False)
    api = ScriptedMessagesAPI(gives_up_silently())

    result = run_agent(api.client(), ToolBox(fail=True))

    assert result.answer == ""
    (replan,) = [d for d, _ in guard.decided if d.action.value == "replan"]
    assert "premature_end" in replan.detectors
    assert replan.recommendation
    assert "lookup" in replan.reason


@pytest.mark.parametrize("sdk_tracing", [True, False], ids=["sdk-spans", "own-spans"])
def test_stream_closed_early_ends_every_span_once(make_loopguard, sdk_tracing):
    guard = make_loopguard(mode="enforce")
    client = ScriptedMessagesAPI(productive()).client(sdk_tracing=sdk_tracing)
    tracer = guard.app_tracer()

    with tracer.start_as_current_span("application"):
        stream = client.messages.create(
            model=MODEL,
            max_tokens=1024,
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
        )
        first = next(iter(stream))
        stream.close()
        with client.messages.stream(
            model=MODEL, max_tokens=1024, messages=[{"role": "user", "content": "hi"}]
        ) as events:
            for _event in events:
                break

    assert first.type == "message_start"
    assert len(chat_spans(guard)) == 2
    guard.assert_every_span_ended_once()


def test_failed_request_ends_our_span_with_the_error(make_loopguard):
    guard = make_loopguard(mode="enforce")

    def unavailable(messages):
        raise RuntimeError("connection reset")

    client = ScriptedMessagesAPI(unavailable).client(sdk_tracing=False)
    with pytest.raises(Exception, match="Connection error"):
        client.messages.create(
            model=MODEL, max_tokens=16, messages=[{"role": "user", "content": "hi"}]
        )

    (chat,) = chat_spans(guard)
    assert chat.attributes["error.type"] == "APIConnectionError"
    guard.assert_every_span_ended_once()


def test_sdk_tool_runner_loop_is_stopped_from_the_model_turns(make_loopguard):
    """The SDK's own agent loop (beta tool runner) makes its own tool spans, without
    arguments: the repeated tool-call sets of the model turns we see are the evidence, and
    the ``strict`` policy stops on them; the interrupt comes out of ``until_done()``."""
    from anthropic import beta_tool

    from otel_loopguard.guard.decorators import agent_run

    guard = make_loopguard(mode="enforce", policy="strict")
    api = ScriptedMessagesAPI(looping())
    executions = []

    @beta_tool
    def search(query: str) -> str:
        """Search the product knowledge base."""
        executions.append(query)
        return "no results"

    with pytest.raises(LoopGuardInterrupt) as raised, agent_run("runner"):
        api.client().beta.messages.tool_runner(
            model=MODEL,
            max_tokens=256,
            tools=[search],
            messages=[{"role": "user", "content": "How much is the Pro plan?"}],
            max_iterations=12,
        ).until_done()

    assert "repeated_tool_steps" in raised.value.decision.detectors
    assert 1 <= len(executions) <= MAX_EXECUTIONS
    sdk_tools = [
        s for s in guard.spans() if s.attributes.get("gen_ai.operation.name") == "execute_tool"
    ]
    assert len(sdk_tools) == len(executions), "no second span for the SDK's tool calls"
    guard.assert_every_span_ended_once()
