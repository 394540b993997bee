"""What the agent-framework suites (agno, autogen, google_adk, strands, ...) check alike on a
:class:`~otel_loopguard_testing.harness.Harness`, after a run of one of their agents with a
:class:`~otel_loopguard_testing.scripted_models.CountingSearch` tool.

Each check is a block of assertions a suite's test makes once its framework has run: the
test itself still runs the framework its own way, and asserts what is its own after it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from .harness import Harness


def assert_productive_run(
    harness: Harness,
    *,
    searches: int = 3,
    agent: str = "researcher",
    content: str = "pricing",
    tools_under: str = "agent",
) -> Any:
    """A productive run, as it would go without the plugin: no STOP, one gated
    ``execute_tool search`` span per search, under the one ``invoke_agent {agent}`` span
    (its children; ``tools_under="trace"``: in its trace), which ended ``completed``; the
    calls name the agent and carry no ``content`` without the opt-in; every span ended
    once. Returns the agent's span."""
    assert [d for d, _ in harness.decided if d.action.value == "stop"] == []
    tools = harness.tool_spans()
    assert [s.name for s in tools] == ["execute_tool search"] * searches
    (run,) = harness.agent_spans()
    assert run.name == f"invoke_agent {agent}"
    assert run.attributes["loopguard.run.state"] == "completed"
    if tools_under == "agent":
        assert all(s.parent.span_id == run.context.span_id for s in tools)
    else:
        assert tools_under == "trace", tools_under
        assert all(s.context.trace_id == run.context.trace_id for s in tools)
    assert tools[0].attributes["gen_ai.agent.name"] == agent
    assert content not in str(dict(tools[0].attributes))  # no content without opt-in
    harness.assert_every_span_ended_once()
    return run


def assert_stopped_on_a_permanent_failure(
    harness: Harness, search: Any, stopped: Any, error_type: str = "ToolError"
) -> None:
    """A looping agent whose search fails for good (``forbidden``) was stopped by the
    permanent-failure detector within two executions (``stopped``: the
    ``pytest.raises(LoopGuardInterrupt)`` info), and the gate reported the failure as the
    call's ``error.type``."""
    assert len(search.executions) <= 2
    assert "permanent_failure" in stopped.value.decision.detectors
    errors = [s for s in harness.tool_spans("search") if s.attributes.get("error.type")]
    assert errors[0].attributes["error.type"] == error_type


def assert_ran_untouched_by_our_error(
    harness: Harness, search: Any, where: str, *, searches: int = 3, agent: str = "researcher"
) -> None:
    """An error in our own code reading the tool calls (``where``, the place logged) was
    logged, and the calls ran ungated, untouched: ``searches`` executions, no tool span of
    ours, the agent's run ``completed``."""
    assert len(search.executions) == searches
    assert harness.tool_spans() == []  # not gated, never broken
    assert any(where in message for message in harness.logged())
    assert harness.run_state(agent) == "completed"


def assert_completed_without_stop(
    harness: Harness, *, tool: str = "lookup", calls: int = 3
) -> None:
    """A productive run left alone: ``calls`` gated ``execute_tool {tool}`` spans, no STOP
    on any of them, the one agent span ``completed``, every span ended once."""
    tools = harness.tool_spans(tool)
    assert len(tools) == calls
    assert not any(harness.decisions_on(s, "stop") for s in tools)
    (run,) = harness.agent_spans()
    assert run.attributes["loopguard.run.state"] == "completed"
    harness.assert_every_span_ended_once()


def unreadable(shape: str) -> Callable[..., Any]:
    """A stand-in for our own code reading a framework's ``shape`` (a call, a run) that
    fails, for ``monkeypatch.setattr(module, "_read_call", unreadable("call"))``: an error
    in our code must never break the application."""

    def read(*args: object) -> object:
        raise RuntimeError(f"a {shape} shape we do not know")

    return read


def unreadable_by(readers: str | tuple[str, ...], attribute: str, error: str) -> type:
    """A mixin for a subclass of a framework's class whose ``attribute`` our own code (the
    modules whose names start with ``readers``) cannot read, while the framework and the
    program can: reading it from there raises ``RuntimeError(error)``. The stand-in for a
    shape we do not know yet, e.g. ``class Odd(unreadable_by("otel_loopguard_x", "usage",
    "a response shape we do not know"), Response)``: an error in our code must never break
    the application."""

    class UnreadableByUs:
        def __getattribute__(self, name: str) -> Any:
            caller = sys._getframe(1).f_globals.get("__name__", "")
            if name == attribute and caller.startswith(readers):
                raise RuntimeError(error)
            return super().__getattribute__(name)

    return UnreadableByUs


def assert_stop_recorded_not_enforced(
    harness: Harness, *, detector: str = "repetition", agent: str = "researcher"
) -> None:
    """Observe mode: the STOP of ``detector`` is exported as a decision, and the run of
    ``agent`` recorded as ``stopped``, while the application went on; every span ended
    once."""
    stops = harness.decision_events("stop")
    assert stops and detector in stops[0][1]["loopguard.detectors"]
    assert harness.run_state(agent) == "stopped"  # recorded, not enforced
    harness.assert_every_span_ended_once()


def assert_inner_agent_joined_the_run(
    harness: Harness, tool: str, *, outer: str = "researcher", inner: str = "helper"
) -> None:
    """An agent called as the tool ``tool`` of another: the ``inner`` agent's span is a
    child of the ``execute_tool {tool}`` span and joins the ``outer`` agent's run, which
    was stopped; every span ended once."""
    (outer_span,) = harness.named(f"invoke_agent {outer}")
    (inner_span,) = harness.named(f"invoke_agent {inner}")
    assert inner_span.attributes["loopguard.run.id"] == outer_span.attributes["loopguard.run.id"]
    assert inner_span.parent.span_id == harness.named(f"execute_tool {tool}")[0].context.span_id
    assert outer_span.attributes["loopguard.run.state"] == "stopped"
    harness.assert_every_span_ended_once()


def assert_cancelled_by_the_consumer(harness: Harness, search: Any, outside: list[Any]) -> None:
    """A streamed run its consumer left after the first search: the run was not current
    where the consumer read it (``outside``, :meth:`LoopGuard.current_run_steps` there, is
    ``[None]``), it ended ``cancelled`` and no span is left open; every span ended once."""
    assert outside == [None]
    assert len(search.executions) == 1
    assert harness.run_state("researcher") == "cancelled"
    assert harness.open_spans() == []
    harness.assert_every_span_ended_once()


def wrapped(function: object) -> bool:
    """A wrapt wrapper (of ours) stands where the framework's function was."""
    return getattr(function, "__wrapped__", None) is not None


def assert_stopped_on_the_third_result(
    harness: Harness, search: Any, model: Any, *, call_ids: bool = True
) -> None:
    """The default policy on a looping agent: the third identical call ran, and its
    identical result stopped the run before ``model`` (the scripted model, counting its
    ``calls``) was asked a fourth time; the STOP is on the third call's span (the calls'
    ids ``call_{turn}_0`` when ``call_ids``); every span ended once."""
    assert len(search.executions) == 3
    assert model.calls == 3
    tools = harness.executed_tool_spans("search")
    assert len(tools) == 3
    if call_ids:
        ids = [s.attributes["gen_ai.tool.call.id"] for s in tools]
        assert ids == ["call_1_0", "call_2_0", "call_3_0"]
    assert harness.decisions_on(tools[-1], "stop")
    assert harness.run_state("researcher") == "stopped"
    harness.assert_every_span_ended_once()


def assert_third_identical_call_vetoed(harness: Harness, search: Any, model: Any) -> None:
    """The strict policy on a looping agent: the third identical call never ran (vetoed
    by the gate, or stopped at the model turn that asked for it) after ``model``'s third
    turn; the run ``stopped``; every span ended once."""
    assert len(search.executions) == 2  # the third identical call never ran
    assert model.calls == 3
    assert harness.vetoed_calls(harness.tool_spans("search")) <= 1
    assert len(harness.executed_tool_spans("search")) == 2
    assert harness.run_state("researcher") == "stopped"
    harness.assert_every_span_ended_once()


def assert_runs_of_their_own(
    harness: Harness, looping_search: Any, *, agents_on_the_calls: bool = True
) -> None:
    """A looping agent ``looper`` and a productive ``researcher`` ran at once: the looper
    was stopped after three searches, the researcher's run ``completed`` (each call names
    its own agent, when ``agents_on_the_calls``); every span ended once."""
    assert len(looping_search.executions) == 3
    assert harness.run_state("looper") == "stopped"
    assert harness.run_state("researcher") == "completed"
    if agents_on_the_calls:
        by_agent = {s.attributes["gen_ai.agent.name"] for s in harness.tool_spans("search")}
        assert by_agent == {"looper", "researcher"}
    harness.assert_every_span_ended_once()


def assert_loop_interrupted(
    harness: Harness,
    executions: int,
    raised: Any = None,
    *,
    most: int = 4,
    agent: str = "researcher",
) -> None:
    """A looping agent's run interrupted: one to ``most`` ``executions`` of its tool, the
    one agent span (``invoke_agent {agent}``) ``stopped``, every span ended once. With
    ``raised`` (the ``pytest.raises(LoopGuardInterrupt)`` info): the interrupt is a STOP,
    exported as a decision on a span, and each real execution has its own ``execute_tool
    search`` span."""
    assert 1 <= executions <= most
    if raised is not None:
        assert raised.value.decision.action.value == "stop"
        # one span per real execution of the tool
        assert len(harness.executed_tool_spans("search")) == executions
        assert harness.decision_events("stop"), "the STOP decision is exported on a span"
    (run,) = harness.agent_spans()
    assert run.name == f"invoke_agent {agent}"
    assert run.attributes["loopguard.run.state"] == "stopped"
    harness.assert_every_span_ended_once()


def assert_genai_agent_and_tool_spans(
    harness: Harness, executions: list[Any], *, searches: int = 4, agent: str = "researcher"
) -> list[Any]:
    """A productive run's spans per the GenAI conventions: the one ``invoke_agent
    {agent}`` span, ``completed``; one ``execute_tool search`` span per execution (there
    were ``searches``), each its child, with a call id and no content (not exported unless
    the user opts in). Returns the tool spans."""
    (agent_span,) = harness.named(f"invoke_agent {agent}")
    assert agent_span.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert agent_span.attributes["gen_ai.agent.name"] == agent
    assert agent_span.attributes["loopguard.run.state"] == "completed"
    tool_spans = harness.tool_spans("search")
    assert len(tool_spans) == len(executions) == searches
    for span in tool_spans:
        assert span.parent is not None and span.parent.span_id == agent_span.context.span_id
        assert span.attributes["gen_ai.operation.name"] == "execute_tool"
        assert span.attributes["gen_ai.tool.name"] == "search"
        assert span.attributes["gen_ai.tool.call.id"]
        assert "gen_ai.tool.call.arguments" not in span.attributes
        assert "gen_ai.tool.call.result" not in span.attributes
    return tool_spans
