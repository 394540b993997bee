"""Property tests: whatever spans arrive, in whatever order, no hook raises or even errs."""

from __future__ import annotations

import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event as SpanEvent
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from otel_loopguard.processor import LoopGuardSpanProcessor

from .helpers import make_stack

KEYS = [
    "gen_ai.operation.name",
    "gen_ai.tool.name",
    "gen_ai.tool.call.id",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.agent.name",
    "gen_ai.conversation.id",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.response.finish_reasons",
    "gen_ai.output.messages",
    "gen_ai.request.model",
    "error.type",
    "openinference.span.kind",
    "tool.name",
    "input.value",
    "output.value",
    "llm.token_count.prompt",
    "llm.output_messages.0.message.role",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
    "traceloop.span.kind",
    "traceloop.entity.name",
    "traceloop.entity.input",
    "gen_ai.completion.0.role",
    "gen_ai.completion.0.tool_calls.0.name",
    "session.id",
    "mcp.method.name",
    "tool_arguments",
    "tool_response",
    "agent_name",
    "from_agent",
    "to_agent",
    "http.response.status_code",
    "llm.request.type",
]
OPERATIONS = [
    "execute_tool",
    "invoke_agent",
    "invoke_workflow",
    "chat",
    "text_completion",
    "generate_content",
    "TOOL",
    "LLM",
    "AGENT",
    "CHAIN",
    "tool",
    "agent",
    "workflow",
    "tools/call",
    "transfer_to_x",
    "handoff_to_y",
]
NAMES = [
    "execute_tool search",
    "invoke_agent a",
    "running tool",
    "agent run",
    "tools/call read",
    "Handoff: a → b",
    "handoff to c",
    "chat m",
    "x",
    "",
]

scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=30),
    st.binary(max_size=10),
    st.sampled_from(OPERATIONS),
    st.just('{"q": [1, 2, {"r": null}]}'),
    st.just("[" * 50),
    st.just("x" * 300_000),
    st.just('[{"role": "assistant", "parts": [{"type": "tool_call", "name": 3}]}]'),
)
value = st.one_of(
    scalar,
    st.lists(scalar, max_size=4).map(tuple),
    st.dictionaries(st.text(max_size=5), scalar, max_size=3),
)
attributes = st.dictionaries(st.sampled_from(KEYS), value, max_size=8)

span_spec = st.fixed_dictionaries(
    {
        "name": st.sampled_from(NAMES),
        "attributes": attributes,
        "trace": st.integers(1, 3),
        "parent": st.one_of(st.none(), st.integers(0, 11)),
        "remote_parent": st.booleans(),
        "status": st.sampled_from([StatusCode.UNSET, StatusCode.OK, StatusCode.ERROR]),
        "exception": st.one_of(st.none(), attributes),
        "own_scope": st.booleans(),
    }
)


def build(specs: list[dict], index: int, start_only: bool) -> ReadableSpan:
    spec = specs[index]
    context = SpanContext(spec["trace"], index + 1, False, TraceFlags(TraceFlags.SAMPLED))
    parent = None
    if spec["parent"] is not None:
        parent = SpanContext(spec["trace"], spec["parent"] + 1, spec["remote_parent"])
    events = ()
    if spec["exception"] is not None and not start_only:
        events = (SpanEvent("exception", spec["exception"]),)
    return ReadableSpan(
        name=spec["name"],
        context=context,
        parent=parent,
        resource=Resource.get_empty(),
        attributes=spec["attributes"],
        events=events,
        kind=SpanKind.INTERNAL,
        status=Status(spec["status"]),
        start_time=index,
        end_time=None if start_only else 10_000 + index,
        instrumentation_scope=InstrumentationScope(
            "otel_loopguard" if spec["own_scope"] else "other"
        ),
    )


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    specs=st.lists(span_spec, min_size=1, max_size=12),
    order=st.randoms(use_true_random=False),
)
def test_arbitrary_spans_in_any_order_never_raise_nor_err(specs: list[dict], order) -> None:
    stack = make_stack(max_runs=2)
    processor = LoopGuardSpanProcessor(stack.guard)
    starts = list(range(len(specs)))
    ends = [*range(len(specs)), order.randrange(len(specs))]  # one span ends twice
    order.shuffle(starts)
    order.shuffle(ends)
    for index in starts[: len(starts) - 1]:  # one span never starts (evicted / not seen)
        processor.on_start(build(specs, index, True))  # type: ignore[arg-type]
    for index in ends:
        processor.on_end(build(specs, index, False))
    assert stack.metric_total("loopguard.internal_errors") == 0
    assert stack.guard.monitor.internal_errors == 0
    assert len(stack.guard.follower) <= 3


def test_an_internal_failure_is_caught_counted_and_logged_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    stack = make_stack()

    class BrokenMonitor:
        """A bug deep in the processor's work (the monitor here: a compiled build's
        functions cannot be replaced from outside, the guard's monitor can)."""

        def observe(self, event):  # type: ignore[no-untyped-def]
            raise RecursionError("monitor exploded")

    monkeypatch.setattr(stack.guard, "monitor", BrokenMonitor())
    with caplog.at_level(logging.WARNING, logger="otel_loopguard"):
        for _ in range(3):
            with stack.tracer.start_as_current_span(
                "execute_tool t", attributes={"gen_ai.operation.name": "execute_tool"}
            ):
                pass
    assert len(stack.spans("execute_tool t")) == 3  # the program and its exporter went on
    assert stack.metric_total("loopguard.internal_errors", where="on_end") == 3
    assert caplog.text.count("internal error in on_end") == 1
