"""The enforcement gate: veto before a call, interrupt after the STOP result, one span end."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_loopguard.engine.decisions import Action, LoopGuardInterrupt
from otel_loopguard.guard.decorators import agent_run, loopguard_tool, tool_span

from .helpers import Stack, make_stack


def _framework_loop(search, times: int) -> list[str]:
    """What frameworks do: catch Exception around a tool and feed it back to the model."""
    seen = []
    for _ in range(times):
        try:
            seen.append(search("pricing"))
        except Exception as exc:
            seen.append(f"error: {exc}")
    return seen


def test_enforce_interrupts_after_stop_and_vetoes_the_next_call(enforcing: Stack) -> None:
    executed: list[str] = []

    @loopguard_tool(tracer=enforcing.tracer)
    def search(query: str) -> str:
        executed.append(query)
        return "no results"

    with pytest.raises(LoopGuardInterrupt) as raised:
        with agent_run("researcher", tracer=enforcing.tracer):
            _framework_loop(search, 10)
    decision = raised.value.decision
    assert decision.action is Action.STOP and "repetition" in decision.detectors
    ran = len(executed)
    assert 2 <= ran < 10  # stopped well before the framework's own loop ended
    (agent,) = enforcing.spans("invoke_agent researcher")
    assert agent.attributes["loopguard.run.state"] == "stopped"
    assert agent.attributes["error.type"] == "LoopGuardInterrupt"
    tool_spans = enforcing.spans("execute_tool search")
    assert len(tool_spans) == ran  # the interrupted call's span ended once, like the others
    stops = [
        e
        for s in tool_spans
        for e in s.events
        if e.name == "loopguard.decision" and e.attributes["loopguard.action"] == "stop"
    ]
    assert len(stops) == 1  # the decision is on the tool span that produced it
    assert enforcing.metric_total("loopguard.interrupts") >= 1


def test_pre_call_veto_keeps_the_tool_from_running(enforcing: Stack) -> None:
    executed: list[int] = []
    guard = enforcing.guard
    with pytest.raises(LoopGuardInterrupt):
        with agent_run("a", tracer=enforcing.tracer) as run:
            for i in range(10):
                try:
                    with tool_span("search", {"q": "same"}, tracer=enforcing.tracer) as call:
                        executed.append(i)
                        call.set_result("nothing")
                except LoopGuardInterrupt:
                    # a framework that swallowed even BaseException: the next call is vetoed
                    with tool_span("search", {"q": "other"}, tracer=enforcing.tracer):
                        executed.append(-1)
    assert -1 not in executed
    assert guard.monitor.run_snapshot(run.run_id) is None  # ended with the agent span
    vetoed = [
        s
        for s in enforcing.spans("execute_tool search")
        if s.attributes.get("error.type") == "LoopGuardInterrupt"
    ]
    assert vetoed and all(s.status.status_code.name == "ERROR" for s in vetoed)


def test_preflight_limit_vetoes_the_third_tool_call() -> None:
    stack = make_stack(mode="enforce", max_tool_calls=2)
    executed = []

    @loopguard_tool(tracer=stack.tracer, guard=stack.guard)
    def fetch(url: str) -> str:
        executed.append(url)
        return url

    with pytest.raises(LoopGuardInterrupt) as raised:
        with agent_run("a", tracer=stack.tracer, guard=stack.guard):
            for i in range(5):
                fetch(f"https://example.invalid/{i}")
    assert executed == ["https://example.invalid/0", "https://example.invalid/1"]
    assert raised.value.decision.detectors == ("budget",)
    (agent,) = stack.spans("invoke_agent a")
    assert agent.attributes["loopguard.run.state"] == raised.value.decision.end_state.value
    assert raised.value.decision.end_state.value in ("max_steps", "budget_exceeded")


def test_observe_mode_never_raises_but_records(stack: Stack) -> None:
    heard = []
    stack.guard.on_decision(lambda decision, event: heard.append(decision.action))

    @loopguard_tool(tracer=stack.tracer)
    def search(query: str) -> str:
        return "no results"

    with agent_run("researcher", tracer=stack.tracer):
        for _ in range(6):
            search("pricing")
    assert heard[0] is Action.WARN and heard[-1] is Action.STOP
    assert heard.count(Action.STOP) == 1
    (agent,) = stack.spans("invoke_agent researcher")
    assert agent.attributes["loopguard.run.state"] == "stopped"
    assert len(stack.spans("execute_tool search")) == 6
    # spans made by the gate are not fed a second time by the processor
    snapshot_calls = [e for _, e in stack.decision_events()]
    assert len(snapshot_calls) == len(heard)


def test_async_tools_under_gather_keep_their_own_runs(enforcing: Stack) -> None:
    calls = {"looping": 0, "healthy": 0}

    @loopguard_tool(tracer=enforcing.tracer)
    async def search(agent: str, query: str) -> str:
        calls[agent] += 1
        await asyncio.sleep(0)
        return "no results" if agent == "looping" else f"result for {query}"

    async def looping() -> str:
        with agent_run("looping", tracer=enforcing.tracer):
            for _ in range(10):
                await search("looping", "same")
        return "done"

    async def healthy() -> str:
        with agent_run("healthy", tracer=enforcing.tracer):
            for i in range(10):
                await search("healthy", f"q{i}")
        return "done"

    async def main() -> list:
        return await asyncio.gather(looping(), healthy(), return_exceptions=True)

    looping_outcome, healthy_outcome = asyncio.run(main())
    assert isinstance(looping_outcome, LoopGuardInterrupt)
    assert healthy_outcome == "done" and calls["healthy"] == 10
    assert calls["looping"] < 10


def test_threads_with_propagated_context_share_the_run(stack: Stack) -> None:
    @loopguard_tool(tracer=stack.tracer)
    def search(query: str) -> str:
        return "no results"

    with agent_run("fanout", tracer=stack.tracer) as run:
        threads = [
            threading.Thread(target=contextvars.copy_context().run, args=(search, "pricing"))
            for _ in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        snapshot = stack.guard.monitor.run_snapshot(run.run_id)
        assert snapshot is not None and snapshot.counters.tool_calls == 4


def test_every_span_ends_exactly_once_and_odd_arguments_never_raise(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    cyclic: dict = {}
    cyclic["self"] = cyclic

    class Hostile:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

        def __str__(self) -> str:
            raise RuntimeError("no str")

    @loopguard_tool(tracer=stack.tracer)
    def tool(value: object) -> object:
        if isinstance(value, Hostile):
            raise ValueError("bad input")
        return value

    with caplog.at_level(logging.WARNING), agent_run("odd", tracer=stack.tracer):
        for value in (cyclic, Hostile(), b"\xff" * 10, 10**100, float("nan"), None):
            with contextlib.suppress(ValueError):
                tool(value)
    assert "ended span" not in caplog.text
    assert len(stack.spans("execute_tool tool")) == 6
    assert stack.metric_total("loopguard.internal_errors") == 0


def test_content_capture_puts_arguments_and_result_on_the_span() -> None:
    private = make_stack()
    captured = make_stack(capture_content=True)
    for built in (private, captured):
        with built.guard.tool_call(built.tracer, "lookup", {"id": 7}) as call:
            call.set_result({"name": "Ada"})
    (plain,) = private.spans("execute_tool lookup")
    assert "gen_ai.tool.call.arguments" not in plain.attributes
    assert "gen_ai.tool.call.result" not in plain.attributes
    (shown,) = captured.spans("execute_tool lookup")
    assert shown.attributes["gen_ai.tool.call.arguments"] == '{"id": 7}'
    assert shown.attributes["gen_ai.tool.call.result"] == '{"name": "Ada"}'
    assert shown.attributes["gen_ai.operation.name"] == "execute_tool"


def test_on_decision_hears_replan_with_its_recommendation_and_enforce_does_not_raise() -> None:
    stack = make_stack(mode="enforce")
    guard = stack.guard
    heard: list = []

    @guard.on_decision
    def inject(decision, event) -> None:
        heard.append(decision)

    with guard.agent_run(stack.tracer, "reader") as run:
        for i in range(12):  # a read-only loop: replan is advice, never an interrupt
            guard.observe_llm_response(
                model="m",
                finish_reason="tool_calls",
                requested_tool_calls=[("read_file", {"path": f"f{i}"})],
            )
            with guard.tool_call(stack.tracer, "read_file", {"path": f"f{i}"}) as call:
                call.set_result(f"content {i}")
    replans = [d for d in heard if d.action is Action.REPLAN]
    assert replans and replans[0].recommendation
    assert replans[0].run_id == run.run_id
    (agent,) = stack.spans("invoke_agent reader")
    assert agent.attributes["loopguard.run.state"] == "completed"
    events = [e for _, e in stack.decision_events() if e.attributes["loopguard.action"] == "replan"]
    assert events[0].attributes["loopguard.recommendation"] == replans[0].recommendation


@settings(max_examples=60, deadline=None)
@given(
    arguments=st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(), st.binary()),
        lambda children: st.one_of(
            st.lists(children, max_size=4),
            st.dictionaries(st.one_of(st.text(), st.integers()), children, max_size=4),
            st.tuples(children, children),
            st.frozensets(st.integers(), max_size=3),
        ),
        max_leaves=20,
    ),
    capture=st.booleans(),
)
def test_any_arguments_and_results_pass_through_the_gate(arguments, capture: bool) -> None:
    stack = make_stack(capture_content=capture)
    with stack.guard.tool_call(stack.tracer, "tool", arguments) as call:
        call.set_result(arguments)
    (span,) = stack.spans("execute_tool tool")
    assert ("gen_ai.tool.call.arguments" in span.attributes) is (capture and arguments is not None)
    assert stack.metric_total("loopguard.internal_errors") == 0


def test_model_call_preflight_and_the_current_run_check_raise_only_when_enforcing() -> None:
    for mode in ("observe", "enforce"):
        stack = make_stack(mode=mode, token_budget=100)
        guard = stack.guard
        raised = []
        with agent_run("writer", tracer=stack.tracer, guard=guard):
            guard.preflight_llm(expected_tokens=10)  # within budget: nothing happens
            checks = (
                functools.partial(
                    guard.observe_llm_response, model="m", input_tokens=90, output_tokens=20
                ),  # this turn passes the budget
                functools.partial(guard.preflight_llm, expected_tokens=10),
                guard.check_current_run,
            )
            for check in checks:
                try:
                    decision = check()
                except LoopGuardInterrupt as interrupt:
                    raised.append(interrupt.decision)
                else:
                    assert decision.action is Action.STOP
        if mode == "enforce":
            assert len(raised) == 3 and raised[0].detectors == ("budget",)
        else:
            assert raised == []
        (agent,) = stack.spans("invoke_agent writer")
        assert agent.attributes["loopguard.run.state"] == "budget_exceeded"


def test_model_turns_and_handoffs_take_what_frameworks_report() -> None:
    """Token counts as floats or numeric strings, names that are not ``str``: each turn
    still counts (both builds; a compiled ``Event`` rejects those types as they come)."""
    stack = make_stack(mode="enforce", token_budget=100)
    guard = stack.guard
    with pytest.raises(LoopGuardInterrupt) as raised:
        with guard.agent_run(stack.tracer, "writer"):
            guard.observe_llm_response(model=7, input_tokens=30.0, output_tokens="10")
            guard.observe_handoff(None, 42)  # a target agent known by its number
            guard.observe_llm_response(input_tokens=40, output_tokens=25.0)  # 105 > 100
    assert "budget" in raised.value.decision.detectors
    (agent,) = stack.spans("invoke_agent writer")
    assert agent.attributes["gen_ai.usage.input_tokens"] == 70
    assert agent.attributes["gen_ai.usage.output_tokens"] == 35
    assert stack.metric_total("loopguard.internal_errors") == 0
