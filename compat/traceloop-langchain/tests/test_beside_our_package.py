"""OpenLLMetry's LangChain instrumentation beside our LangChain package, enforce mode.

Both trace every tool execution and model turn; Traceloop parents its tool span to its own
task span (the tree is built from callback run ids), so one execution is told apart by what
both sides carry: the tool-call id (Traceloop's is in its argument envelope) and the time.
Each execution and each turn must count once: the loop is interrupted after at most four
real executions, a productive run's steps and tokens are the real ones, and a token budget
stops at the turn that goes over it.
"""

from __future__ import annotations

import pytest
from agents import (
    ANSWER,
    CountingChatModel,
    build_react_graph,
    final_answer,
    looping_script,
    priced_script,
)
from otel_loopguard_testing.compat_checks import assert_interrupted_in_each_invocation
from otel_loopguard_testing.metrics import metric_counter
from otel_loopguard_testing.scripted_models import ToolCounter

from otel_loopguard import LoopGuardInterrupt

USER_INPUT = {"messages": [("user", "What does the Pro plan cost?")]}
OUR_SCOPE = "otel_loopguard_langchain"


@pytest.fixture(autouse=True)
def content_on(monkeypatch) -> None:
    monkeypatch.setenv("TRACELOOP_TRACE_CONTENT", "true")


def _our_run(harness, agent: str = "support_agent"):
    """Our ``invoke_agent`` span of the run (Traceloop names its agent span alike)."""
    (span,) = [
        s
        for s in harness.named(f"invoke_agent {agent}")
        if s.instrumentation_scope.name == OUR_SCOPE
    ]
    return span


@pytest.mark.parametrize("content", ["true", "false"], ids=["content-on", "content-off"])
@pytest.mark.parametrize("invocations", [1, 2])
def test_the_looping_run_is_interrupted_after_at_most_four_executions(
    with_our_package, invocations, content, monkeypatch
):
    """Content off too: our gate's spans carry the signatures their spans lack."""
    monkeypatch.setenv("TRACELOOP_TRACE_CONTENT", content)

    def start():
        counter = ToolCounter()
        graph = build_react_graph(looping_script(), counter)
        return lambda: graph.invoke(USER_INPUT), lambda: counter["search"]

    assert_interrupted_in_each_invocation(with_our_package(mode="enforce"), invocations, start)


def test_the_productive_run_completes_with_the_real_steps_and_tokens(with_our_package):
    harness = with_our_package(mode="enforce")
    errors = metric_counter(harness)
    counter = ToolCounter()
    model = CountingChatModel(messages=priced_script())

    state = build_react_graph(iter(()), counter, model=model).invoke(USER_INPUT)

    assert final_answer(state) == ANSWER
    assert (counter["lookup"], model.calls) == (3, 4)
    run = _our_run(harness)
    assert run.attributes["loopguard.run.state"] == "completed"
    # four turns of 40 + 10 tokens, each counted once
    assert run.attributes["gen_ai.usage.input_tokens"] == 4 * 40
    assert run.attributes["gen_ai.usage.output_tokens"] == 4 * 10
    assert harness.decision_events("stop") == []
    assert errors("loopguard.internal_errors") == 0


def test_a_token_budget_stops_at_the_turn_that_goes_over_it(with_our_package):
    # 150 tokens after the third turn go over 120; counted twice, the second turn (200)
    # would already have
    harness = with_our_package(mode="enforce", token_budget=120)
    counter = ToolCounter()
    model = CountingChatModel(messages=priced_script())

    with pytest.raises(LoopGuardInterrupt) as raised:
        build_react_graph(iter(()), counter, model=model).invoke(USER_INPUT)

    assert raised.value.decision.detectors == ("budget",)
    assert model.calls == 3
    assert counter["lookup"] == 2  # the third turn's lookup never ran
    run = _our_run(harness)
    assert run.attributes["loopguard.run.state"] == "budget_exceeded"
    assert run.attributes["gen_ai.usage.input_tokens"] == 3 * 40
    assert run.attributes["gen_ai.usage.output_tokens"] == 3 * 10
