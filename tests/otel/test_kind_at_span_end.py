"""Spans that say what they are only when they end (issue 17, point 4), or just after they
started (Langfuse's observations, issue 29 point 7).

OpenInference's LangChain tracer starts every span with no attribute at all and sets
``openinference.span.kind`` (and everything else) when the LangChain run ends. Its outermost
span of a graph invocation is still the agent that keys the run: the spans here are made the
way it makes them, by a tracer of its scope name, on the real SDK.
"""

from __future__ import annotations

import contextlib

from opentelemetry import trace

from .helpers import Stack

SCOPE = "openinference.instrumentation.langchain"


def _span(stack: Stack, name: str, parent=None):
    tracer = stack.provider.get_tracer(SCOPE)
    context = trace.set_span_in_context(parent) if parent is not None else None
    return tracer.start_span(name, context=context)


def _end(span, kind: str, **attributes) -> None:
    span.set_attributes({"openinference.span.kind": kind, **attributes})
    span.end()


def _invocation(stack: Stack, calls: int, name: str = "support_agent") -> None:
    """One LangGraph invocation as OpenInference traces it: the graph span (its parent the
    current span), a model span and a tool span per step under node spans of their own."""
    graph = _span(stack, name, trace.get_current_span())
    for _ in range(calls):
        node = _span(stack, "agent", graph)
        _end(_span(stack, "ChatModel", node), "LLM")
        _end(node, "AGENT")
        tools = _span(stack, "tools", graph)
        _end(
            _span(stack, "search", tools),
            "TOOL",
            **{"tool.name": "search", "input.value": "pricing", "output.value": "no results"},
        )
        _end(tools, "CHAIN")
    _end(graph, "AGENT")


def _run_spans(stack: Stack) -> list:
    return stack.spans("loopguard.run")


def test_two_invocations_under_one_application_span_are_two_runs(stack: Stack) -> None:
    app = stack.provider.get_tracer("application")
    with app.start_as_current_span("handle_request"):
        _invocation(stack, 4)  # a loop: stopped
        _invocation(stack, 1)  # the next request's one search: its own run, completed
    first, second = _run_spans(stack)
    assert first.attributes["loopguard.run.id"] != second.attributes["loopguard.run.id"]
    assert first.attributes["loopguard.run.state"] == "stopped"
    assert second.attributes["loopguard.run.state"] == "completed"
    assert second.attributes["loopguard.run.tool_calls"] == 1


def test_the_run_state_goes_on_the_agent_span_of_a_root_invocation(stack: Stack) -> None:
    _invocation(stack, 1)
    (run,) = _run_spans(stack)
    (graph,) = stack.spans("support_agent")
    assert run.parent.span_id == graph.context.span_id
    assert run.attributes["loopguard.run.state"] == "completed"
    assert run.attributes["loopguard.run.id"].endswith(format(graph.context.span_id, "016x"))


def test_the_decision_goes_on_their_open_agent_span(stack: Stack) -> None:
    _invocation(stack, 4)
    (graph,) = stack.spans("support_agent")
    actions = [e.attributes["loopguard.action"] for e in graph.events]
    assert "stop" in actions
    assert not stack.spans("loopguard.decision")  # no stand-in span needed


def test_bare_model_and_tool_calls_of_a_hand_written_loop_share_the_trace_run(
    stack: Stack,
) -> None:
    """Their top span that ends as a model or tool span is no agent: a loop written by hand
    around ``model.invoke`` / ``tool.invoke`` stays one run (the trace's)."""
    app = stack.provider.get_tracer("application")
    with app.start_as_current_span("handle_request"):
        for _ in range(4):
            _end(_span(stack, "ChatModel", trace.get_current_span()), "LLM")
            _end(
                _span(stack, "search", trace.get_current_span()),
                "TOOL",
                **{"tool.name": "search", "input.value": "pricing", "output.value": "none"},
            )
    stops = [e for _, e in stack.decision_events() if e.attributes["loopguard.action"] == "stop"]
    assert stops
    assert len({e.attributes["loopguard.run.id"] for e in stops}) == 1
    assert not _run_spans(stack)
    assert not stack.guard.follower.traces  # nothing left open


@contextlib.contextmanager
def _observation(stack: Stack, name: str, kind: str, **attributes):
    """A span as Langfuse's ``@observe`` makes it: started with no attribute (made current),
    its ``langfuse.observation.type`` set just after."""
    with stack.provider.get_tracer("langfuse-sdk").start_as_current_span(name) as span:
        span.set_attributes({"langfuse.observation.type": kind, **attributes})
        yield span


def _observed_agent(stack: Stack, calls: int) -> None:
    with _observation(stack, "support_agent", "agent"):
        for _ in range(calls):
            with _observation(stack, "model", "generation"):
                pass
            with _observation(
                stack,
                "search",
                "tool",
                **{
                    "langfuse.observation.input": '{"args": [], "kwargs": {"q": "price"}}',
                    "langfuse.observation.output": "no results",
                },
            ):
                pass


def test_a_span_that_says_it_is_no_agent_just_after_its_start_is_let_go(stack: Stack) -> None:
    """A Langfuse ``span`` observation around the request (its type set just after its
    start): by its first child's start it said it is no agent, so the agents inside it are
    the runs, one each."""
    with _observation(stack, "handle_request", "span"):
        _observed_agent(stack, 4)  # a loop: stopped
        _observed_agent(stack, 1)  # its own run, completed
    first, second = _run_spans(stack)
    assert first.attributes["loopguard.run.id"] != second.attributes["loopguard.run.id"]
    assert first.attributes["loopguard.run.state"] == "stopped"
    assert second.attributes["loopguard.run.state"] == "completed"
    assert second.attributes["loopguard.run.tool_calls"] == 1
