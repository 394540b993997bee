"""Model turns of LlamaIndex agents: token budgets, max steps, counted once, never breaking.

The scripted model (``agents.UsageLLM``) reports usage where providers do, in an
OpenAI-style ``ChatResponse.raw``. Each test also shows what happens without the
model-turn wrapper (the ``without_model_turns`` fixture), or checks something only the
wrapper does, so it fails when the feature is removed.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import pytest
from agents import (
    ToolCounter,
    UsageLLM,
    build_usage_agent,
    make_tools,
    productive_script,
    run_to_end,
)
from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from opentelemetry.instrumentation.utils import unwrap
from otel_loopguard_llamaindex import LoopGuardWorkflowInterrupt, model_turns
from otel_loopguard_llamaindex.model_turns import agent_step_wrapper
from wrapt import wrap_function_wrapper

from otel_loopguard import LoopGuardInterrupt
from otel_loopguard.guard import get_guard


def _assert_the_run(guard: Any, state: str, *, tokens: tuple[int, int] | None = None) -> None:
    """The one agent span (the run) ended ``state``, with ``tokens`` (input, output) on it
    when given; every span ended once."""
    (run,) = guard.agent_spans()
    assert run.attributes["loopguard.run.state"] == state
    if tokens is not None:
        usage = ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens")
        assert tuple(run.attributes[key] for key in usage) == tokens
    guard.assert_every_span_ended_once()


_STEP_OWNERS = (
    ("llama_index.core.agent.workflow.base_agent", "BaseWorkflowAgent"),
    ("llama_index.core.agent.workflow.multi_agent_workflow", "AgentWorkflow"),
)


@pytest.fixture
def without_model_turns() -> Callable[[], AbstractContextManager[None]]:
    """``with without_model_turns():`` the instrumentation minus the model-turn wrapper, for
    a baseline part of a test."""
    from llama_index.core.agent.workflow.base_agent import BaseWorkflowAgent

    @contextmanager
    def off() -> Iterator[None]:
        for cls in (BaseWorkflowAgent, AgentWorkflow):
            unwrap(cls, "run_agent_step")
        try:
            yield
        finally:
            for module, name in _STEP_OWNERS:
                wrap_function_wrapper(module, f"{name}.run_agent_step", agent_step_wrapper())

    return off


@pytest.mark.parametrize("streaming", [False, True], ids=["chat", "stream-chat"])
async def test_token_budget_stops_the_agent_before_its_next_tool(
    make_loopguard, without_model_turns, streaming
):
    # 70 tokens a turn: the second turn (140) is over a 100-token budget
    make_loopguard(mode="enforce", token_budget=100)
    baseline_counter = ToolCounter()
    baseline, baseline_llm = build_usage_agent(
        productive_script(), baseline_counter, streaming=streaming
    )
    with without_model_turns():  # the tools alone never see the tokens: it runs to the end
        result = await asyncio.wait_for(run_to_end(baseline, stream=streaming), timeout=30)
    assert "Pro plan costs 20 EUR per month" in str(result)
    assert baseline_llm.calls == 4
    assert baseline_counter.calls == {"lookup": 3}
    guard = make_loopguard(mode="enforce", token_budget=100)  # a fresh guard and spans

    counter = ToolCounter()
    agent, llm = build_usage_agent(productive_script(), counter, streaming=streaming)

    with pytest.raises(LoopGuardInterrupt) as raised:
        await asyncio.wait_for(run_to_end(agent, stream=streaming), timeout=30)

    assert isinstance(raised.value, LoopGuardWorkflowInterrupt)
    assert raised.value.decision.action.value == "stop"
    assert llm.calls == 2
    assert counter.calls == {"lookup": 1}, "the second turn's lookup never ran"
    _assert_the_run(guard, "budget_exceeded", tokens=(120, 20))


async def test_max_steps_makes_no_further_model_call(make_loopguard, without_model_turns):
    make_loopguard(mode="enforce", max_steps=2)
    baseline, baseline_llm = build_usage_agent(productive_script(), ToolCounter())
    with without_model_turns():  # no model turn is seen: four model calls
        await asyncio.wait_for(run_to_end(baseline), timeout=30)
    assert baseline_llm.calls == 4
    guard = make_loopguard(mode="enforce", max_steps=2)  # a fresh guard and spans

    counter = ToolCounter()
    agent, llm = build_usage_agent(productive_script(), counter)

    with pytest.raises(LoopGuardInterrupt) as raised:
        await asyncio.wait_for(run_to_end(agent), timeout=30)

    assert raised.value.decision.end_state.value == "max_steps"
    assert llm.calls == 2, "no third model call"
    _assert_the_run(guard, "max_steps")


def _hand_over_to_bob(messages: Sequence[ChatMessage], **_: Any) -> ChatMessage:
    """alice's model, inside the model call: it reports its own turn to the guard, standing
    in for a model-call instrumentation below the agent (our OpenAI package)."""
    get_guard().observe_llm_response(
        model="scripted-gpt",
        finish_reason="tool_calls",
        input_tokens=40,
        output_tokens=10,
        requested_tool_calls=[("handoff", {"to_agent": "bob", "reason": "plan question"})],
    )
    return ChatMessage(
        role=MessageRole.ASSISTANT,
        blocks=[
            ToolCallBlock(
                tool_call_id="h_0",
                tool_name="handoff",
                tool_kwargs={"to_agent": "bob", "reason": "plan question"},
            )
        ],
    )


def _answer(messages: Sequence[ChatMessage], **_: Any) -> ChatMessage:
    return ChatMessage(role=MessageRole.ASSISTANT, content="The Pro plan is 20 EUR a month.")


async def test_a_turn_reported_below_counts_once(make_loopguard):
    """alice's model is instrumented below the agent (it reports its own turn), bob's is not:
    alice's turn counts once and bob's turn is reported by the wrapper."""
    # 90/20 tokens in two turns: under a 150 budget and max_steps=2; alice's turn counted
    # twice (130/30 in three turns) would stop the run, bob's turn lost would show 40/10
    guard = make_loopguard(mode="enforce", token_budget=150, max_steps=2)
    alice = FunctionAgent(
        name="alice",
        description="Billing questions.",
        llm=UsageLLM(response_generator=_hand_over_to_bob, input_tokens=40),
        can_handoff_to=["bob"],
    )
    bob = FunctionAgent(
        name="bob",
        description="Plan questions.",
        llm=UsageLLM(response_generator=_answer, input_tokens=50),
    )
    workflow = AgentWorkflow(agents=[alice, bob], root_agent="alice")

    result = await asyncio.wait_for(run_to_end(workflow), timeout=30)

    assert "20 EUR" in str(result)
    _assert_the_run(guard, "completed", tokens=(90, 20))


async def test_our_bookkeeping_failing_never_breaks_the_run(make_loopguard, monkeypatch):
    guard = make_loopguard(mode="enforce", token_budget=100)
    errors: list[str] = []
    internal_error = guard.guard.telemetry.internal_error

    def record(kind: str, exc: BaseException) -> None:
        errors.append(kind)
        internal_error(kind, exc)

    def broken(*_: Any) -> dict[str, Any]:
        raise RuntimeError("bookkeeping bug")

    monkeypatch.setattr(guard.guard.telemetry, "internal_error", record)
    monkeypatch.setattr(model_turns, "_read_turn", broken)
    counter = ToolCounter()
    agent, _ = build_usage_agent(productive_script(), counter)

    result = await asyncio.wait_for(run_to_end(agent), timeout=30)

    assert "Pro plan costs 20 EUR per month" in str(result)
    assert counter.calls == {"lookup": 3}
    assert errors == ["llamaindex.model_turn"] * 4, "each of the 4 turns was caught and counted"
    _assert_the_run(guard, "completed")


class CutOffLLM(UsageLLM):
    """Every answer hits the output limit; usage and stop reason Anthropic-style in ``raw``
    (``llama-index-llms-anthropic`` keeps the API's ``Message`` there)."""

    def _raw(self, message: ChatMessage) -> dict[str, Any]:
        return {
            "model": "scripted-claude",
            "stop_reason": "max_tokens",
            "usage": {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens},
        }


async def test_a_model_cut_off_again_and_again_is_stopped(make_loopguard, without_model_turns):
    make_loopguard(mode="enforce")
    baseline_llm = CutOffLLM(response_generator=productive_script())
    baseline = FunctionAgent(
        name="support_agent", tools=make_tools(ToolCounter()), llm=baseline_llm
    )
    with without_model_turns():
        await asyncio.wait_for(run_to_end(baseline), timeout=30)
    assert baseline_llm.calls == 4
    # a fresh guard and spans; the truncation STOP is opt-in (issue 18, point 7)
    guard = make_loopguard(mode="enforce", truncation_stops=True)

    counter = ToolCounter()
    llm = CutOffLLM(response_generator=productive_script())
    agent = FunctionAgent(name="support_agent", tools=make_tools(counter), llm=llm)

    with pytest.raises(LoopGuardInterrupt) as raised:
        await asyncio.wait_for(run_to_end(agent), timeout=30)

    # two truncations are answered with a continuation (max_tokens_recoveries=2), the third
    # stops the run before its lookup runs
    assert "truncation" in raised.value.decision.detectors
    assert llm.calls == 3
    assert counter.calls == {"lookup": 2}
    guard.assert_every_span_ended_once()


class _GeminiFinishReason(str, enum.Enum):
    """What google-genai's ``FinishReason`` is: a ``str`` enum, left as is in ``raw``."""

    MAX_TOKENS = "MAX_TOKENS"


class ProviderShapedLLM(UsageLLM):
    """Usage and a cut-off finish reason where each provider integration leaves them in
    ``ChatResponse.raw`` (read from their sources: llama-index-llms-ollama 0.11 adds an
    OpenAI-style ``usage`` beside Ollama's ``done_reason``; bedrock-converse 0.15 keeps the
    Converse response; google-genai 0.11 the top candidate's dump plus ``usage_metadata``)."""

    shape: str = "openai"

    def _raw(self, message: ChatMessage) -> dict[str, Any]:
        tokens_in, tokens_out = self.input_tokens, self.output_tokens
        if self.shape == "ollama":
            return {
                "model": "llama3.2",
                "done_reason": "length",
                "usage": {"prompt_tokens": tokens_in, "completion_tokens": tokens_out},
            }
        if self.shape == "bedrock":
            return {
                "stopReason": "max_tokens",
                "usage": {"inputTokens": tokens_in, "outputTokens": tokens_out},
            }
        assert self.shape == "gemini"
        return {
            "finish_reason": _GeminiFinishReason.MAX_TOKENS,
            "usage_metadata": {
                "prompt_token_count": tokens_in,
                "candidates_token_count": tokens_out,
            },
        }


@pytest.mark.parametrize("shape", ["ollama", "bedrock", "gemini"])
async def test_usage_and_truncation_are_read_in_each_providers_shape(make_loopguard, shape):
    """Every answer is cut off at the output limit: the run is stopped for truncation (two
    continuations allowed, the stop asked for), and the turns' tokens are on the run,
    whatever the provider."""
    guard = make_loopguard(mode="enforce", truncation_stops=True)
    counter = ToolCounter()
    llm = ProviderShapedLLM(response_generator=productive_script(), shape=shape)
    agent = FunctionAgent(name="support_agent", tools=make_tools(counter), llm=llm)

    with pytest.raises(LoopGuardInterrupt) as raised:
        await asyncio.wait_for(run_to_end(agent), timeout=30)

    assert "truncation" in raised.value.decision.detectors
    assert llm.calls == 3
    (run,) = guard.agent_spans()
    assert run.attributes["gen_ai.usage.input_tokens"] == 3 * 60
    assert run.attributes["gen_ai.usage.output_tokens"] == 3 * 10
