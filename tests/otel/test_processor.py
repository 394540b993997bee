"""The processor on a real SDK provider: foreign GenAI spans in, decisions out."""

from __future__ import annotations

import json
import threading

from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode
from otel_loopguard_testing import run_in_threads

from .helpers import (
    Stack,
    foreign_agent_span,
    foreign_tool_span,
    in_process_server_span,
    make_stack,
)


def looping_agent(
    stack: Stack,
    *,
    conversation: str | None = None,
    calls: int = 5,
    agent: str = "researcher",
    looping: bool = True,
) -> None:
    """An agent instrumented by someone else (GenAI semconv spans), stuck on one search
    (or, ``looping=False``, searching something new each time)."""
    tracer = stack.tracer
    attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent}
    if conversation:
        attrs["gen_ai.conversation.id"] = conversation
    with tracer.start_as_current_span(f"invoke_agent {agent}", attributes=attrs):
        for i in range(calls):
            query = "pricing" if looping else f"topic {i}"
            with foreign_tool_span(
                tracer,
                "search",
                call_id=f"call_{i}",
                arguments=json.dumps({"query": query}),
                result="no results" if looping else f"results on {query}",
            ):
                pass


def test_loop_in_foreign_spans_puts_decisions_on_the_open_agent_span(stack: Stack) -> None:
    looping_agent(stack)
    (agent,) = stack.spans("invoke_agent researcher")
    decisions = [e for e in agent.events if e.name == "loopguard.decision"]
    actions = [e.attributes["loopguard.action"] for e in decisions]
    assert actions[0] == "warn" and actions[-1] == "stop"
    assert actions.count("stop") == 1  # a stopped run is reported once, not on every span
    stop = decisions[-1].attributes
    run_id = f"{agent.context.trace_id:032x}:{agent.context.span_id:016x}"
    assert stop["loopguard.run.id"] == run_id
    assert "repetition" in stop["loopguard.detectors"]
    assert 0 < stop["loopguard.risk_score"] <= 1
    assert stop["gen_ai.guardrail.result.value"] == "stop"
    assert stop["gen_ai.tool.name"] == "search" and stop["gen_ai.agent.name"] == "researcher"
    # the run ended with its agent span; the state is on a loopguard.run child span
    (run,) = stack.spans("loopguard.run")
    assert run.parent.span_id == agent.context.span_id
    assert run.attributes["loopguard.run.state"] == "stopped"
    assert run.attributes["loopguard.run.tool_calls"] == 5
    assert stack.guard.monitor.active_runs == 0
    assert stack.metric_total("loopguard.runs", state="stopped") == 1
    assert stack.metric_total("loopguard.decisions", action="stop", detector="repetition") == 1


def test_without_agent_span_the_decision_is_a_zero_duration_span_in_the_trace(
    stack: Stack,
) -> None:
    tracer = stack.tracer
    with tracer.start_as_current_span("request"):
        for _ in range(4):
            with tracer.start_as_current_span(
                "search",
                attributes={
                    "openinference.span.kind": "TOOL",
                    "tool.name": "search",
                    "input.value": '{"q": "x"}',
                    "output.value": "[]",
                },
            ):
                pass
    request = stack.spans("request")[0]
    spans = stack.spans("loopguard.decision")
    assert spans, "expected zero-duration decision spans"
    for span in spans:
        assert span.context.trace_id == request.context.trace_id
        assert span.start_time == span.end_time
        assert span.events[0].name == "loopguard.decision"
    assert spans[-1].attributes["loopguard.action"] == "stop"
    # the trace-keyed run ended with the trace's local root
    assert stack.guard.monitor.active_runs == 0


def test_conversation_runs_outlive_their_traces(stack: Stack) -> None:
    looping_agent(stack, conversation="conv-7", calls=2)
    assert stack.guard.monitor.run_snapshot("conv-7") is not None
    assert not stack.decision_events()
    looping_agent(stack, conversation="conv-7", calls=2)  # a new trace, same conversation
    actions = [e.attributes["loopguard.action"] for _, e in stack.decision_events()]
    assert "stop" in actions
    snapshot = stack.guard.monitor.run_snapshot("conv-7")
    assert snapshot is not None and snapshot.counters.tool_calls == 4


def test_a_tool_span_around_an_mcp_client_span_counts_once(stack: Stack) -> None:
    tracer = stack.tracer
    with tracer.start_as_current_span(
        "agent", attributes={"gen_ai.operation.name": "invoke_agent"}
    ):
        for _ in range(2):
            with (
                tracer.start_as_current_span(
                    "running tool",
                    attributes={"gen_ai.tool.name": "read", "tool_arguments": '{"p": "a"}'},
                ),
                tracer.start_as_current_span(
                    "tools/call read",
                    attributes={"mcp.method.name": "tools/call", "gen_ai.tool.name": "read"},
                ),
            ):
                pass
    (run,) = stack.spans("loopguard.run")
    assert run.attributes["loopguard.run.tool_calls"] == 2


def test_a_gate_tool_span_around_an_mcp_client_span_counts_once(stack: Stack) -> None:
    """The MCP SDK's ``MCP send tools/call`` span inside our wrapper's gate span is the same
    execution: the gate reports it (with its arguments); feeding the client span as well
    would add a second, content-less call per execution and hide the repeated result."""
    guard = stack.guard
    tracer = stack.tracer
    with guard.agent_run(tracer, "researcher"):
        for _ in range(4):
            with guard.tool_call(tracer, "search", {"query": "pricing"}) as call:
                with tracer.start_as_current_span(
                    "MCP send tools/call search",
                    attributes={"mcp.method.name": "tools/call", "jsonrpc.request.id": "7"},
                ):
                    pass
                call.set_result("no results")
    (agent,) = stack.spans("invoke_agent researcher")
    assert agent.attributes["loopguard.run.state"] == "stopped"
    detectors = {
        detector
        for _, event in stack.decision_events()
        if event.attributes["loopguard.action"] == "stop"
        for detector in event.attributes["loopguard.detectors"]
    }
    assert "no_progress" in detectors


def test_tool_spans_nested_deeper_inside_a_gate_tool_span_count_once(stack: Stack) -> None:
    """An MCP client library's own tool span (fastmcp: ``tools/call search``, a GenAI
    ``execute_tool`` CLIENT span) inside the gate span, and the MCP SDK's ``MCP send`` span
    inside that: one execution, reported by the gate; neither nested span is fed."""
    guard = stack.guard
    tracer = stack.tracer
    with guard.agent_run(tracer, "researcher"):
        for _ in range(4):
            with guard.tool_call(tracer, "search", {"query": "pricing"}) as call:
                _mcp_client_call(tracer, {"jsonrpc.request.id": "7"})
                call.set_result("no results")
    (agent,) = stack.spans("invoke_agent researcher")
    assert agent.attributes["loopguard.run.state"] == "stopped"


#: an MCP ``tools/call search`` span's attributes, the client library's and the server's
MCP_TOOL_CALL = {
    "mcp.method.name": "tools/call",
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": "search",
}


def _mcp_client_call(tracer, send_attributes: dict[str, str] | None = None) -> None:
    """One MCP tool call as its spans go: the client library's ``tools/call search`` span
    (a GenAI ``execute_tool`` span), the SDK's ``MCP send`` span inside it (with
    ``send_attributes``) and, under that, the in-process server's span."""
    send_attributes = {"mcp.method.name": "tools/call", **(send_attributes or {})}
    with (
        tracer.start_as_current_span("tools/call search", attributes=MCP_TOOL_CALL),
        tracer.start_as_current_span(
            "MCP send tools/call search", attributes=send_attributes
        ) as send,
    ):
        # the server's tools/call span, in this process
        in_process_server_span(
            tracer, send, "tools/call search", MCP_TOOL_CALL, kind=trace.SpanKind.SERVER
        )


def test_mcp_request_spans_inside_a_foreign_tool_span_leave_that_span_fed(stack: Stack) -> None:
    """pydantic-ai's own tool span (with its arguments) around an MCP client library's
    ``tools/call`` span and the SDK's ``MCP send`` span: the content-less transport spans
    must not stand in for the tool span, or the repeated call is never recognised."""
    tracer = stack.tracer
    with foreign_agent_span(tracer, "researcher"):
        for index in range(4):
            with foreign_tool_span(
                tracer,
                "search",
                call_id=f"call_{index}",
                arguments=json.dumps({"query": "pricing"}),
                result="no results",
            ):
                _mcp_client_call(tracer)
    stops = [e for _, e in stack.decision_events() if e.attributes["loopguard.action"] == "stop"]
    assert stops


def test_a_handoff_span_inside_a_gate_agent_span_is_fed(stack: Stack) -> None:
    """Only a gate *tool* span hides the tool spans inside it; its agent span does not."""
    tracer = stack.tracer
    with stack.guard.agent_run(tracer, "triage"):
        for index in range(6):
            source, target = ("triage", "billing") if index % 2 == 0 else ("billing", "triage")
            with foreign_tool_span(tracer, f"transfer_to_{target}", agent=source):
                pass
    (agent,) = stack.spans("invoke_agent triage")
    assert agent.attributes["loopguard.run.state"] == "stopped"


def test_error_status_of_a_clean_agent_ends_the_run_as_error(stack: Stack) -> None:
    tracer = stack.tracer
    with tracer.start_as_current_span(
        "agent", attributes={"gen_ai.operation.name": "invoke_agent"}
    ) as span:
        span.set_status(Status(StatusCode.ERROR))
    (run,) = stack.spans("loopguard.run")
    assert run.attributes["loopguard.run.state"] == "error"


def test_disabled_guard_does_nothing() -> None:
    disabled = make_stack(enabled=False)
    looping_agent(disabled)
    assert not disabled.decision_events() and not disabled.spans("loopguard.run")


def test_a_conversation_id_on_a_model_span_keys_the_whole_trace(stack: Stack) -> None:
    tracer = stack.tracer
    for _ in range(2):  # two traces of one conversation
        with foreign_agent_span(tracer, "a"):
            with tracer.start_as_current_span(
                "chat m",
                attributes={"gen_ai.operation.name": "chat", "gen_ai.conversation.id": "c-9"},
            ):
                pass
            with foreign_tool_span(tracer, "search", arguments='{"q": "x"}', result="none"):
                pass
    snapshot = stack.guard.monitor.run_snapshot("c-9")
    assert snapshot is not None
    assert (snapshot.counters.tool_calls, snapshot.counters.steps) == (2, 2)


def test_a_gate_tool_call_inside_a_plain_request_span_ends_its_run_with_that_span(
    stack: Stack,
) -> None:
    """A request span that is not GenAI gets no trace state when it starts (most traces of
    a service never hold a GenAI span); a gate tool call inside it must still key its calls
    by that trace and end the run when the request span ends, not leave it to the TTL."""
    guard = stack.guard
    tracer = stack.tracer
    with tracer.start_as_current_span("GET /search", kind=trace.SpanKind.SERVER) as request:
        with guard.tool_call(tracer, "search", {"query": "pricing"}) as call:
            call.set_result("no results")
        run_id = f"{request.get_span_context().trace_id:032x}"
        snapshot = guard.monitor.run_snapshot(run_id)
        assert snapshot is not None and snapshot.counters.tool_calls == 1
    assert guard.monitor.run_snapshot(run_id) is None
    assert guard.monitor.active_runs == 0
    assert len(guard.follower) == 0


def test_threads_of_plain_and_agent_traces_keep_their_runs_apart(stack: Stack) -> None:
    """Eight threads, each serving plain requests and running a foreign agent (semconv
    spans), half of them looping: tool spans end without a shared lock, so this checks
    that every trace's bookkeeping stays its own and is released when the trace ends."""
    tracer = stack.tracer
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def worker(index: int) -> None:
        try:
            barrier.wait()
            for request in range(20):
                with tracer.start_as_current_span("GET /items", kind=trace.SpanKind.SERVER):
                    with tracer.start_as_current_span("SELECT items"):
                        pass
                if request == 10:
                    looping_agent(stack, agent=f"agent{index}", looping=index % 2 == 0)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    run_in_threads(worker, range(8))
    assert not errors
    states = {
        run.attributes["loopguard.run.id"]: run.attributes["loopguard.run.state"]
        for run in stack.spans("loopguard.run")
    }
    agents = {
        span.name.removeprefix("invoke_agent "): f"{span.context.trace_id:032x}:"
        f"{span.context.span_id:016x}"
        for span in stack.spans()
        if span.name.startswith("invoke_agent ")
    }
    assert len(agents) == 8
    for name, run_id in agents.items():
        looping = int(name.removeprefix("agent")) % 2 == 0
        assert states[run_id] == ("stopped" if looping else "completed"), name
    assert stack.guard.monitor.active_runs == 0
    assert len(stack.guard.follower) == 0
    assert stack.metric_total("loopguard.internal_errors") == 0


def test_plain_root_spans_that_never_end_stay_bounded() -> None:
    """A request span that never ends (a leak in the host, a killed worker) leaves nothing
    behind: a trace with no GenAI span has no state in the follower at all. Traces that do
    have one are dropped oldest first past the follower's bound (here 1,000 traces, the
    floor of ``max(OTEL_LOOPGUARD_MAX_RUNS, 1000)``)."""
    stack = make_stack(max_runs=10)
    for index in range(1_500):
        stack.tracer.start_span(f"GET /items/{index}", kind=trace.SpanKind.SERVER)  # never ended
    assert len(stack.guard.follower) == 0
    for index in range(1_500):
        stack.tracer.start_span(
            f"invoke_agent a{index}", attributes={"gen_ai.operation.name": "invoke_agent"}
        )  # never ended either
    assert len(stack.guard.follower) == 1_000
    assert stack.metric_total("loopguard.internal_errors") == 0
