"""A model turn seen by a framework wrapper and by a layer below it counts once.

Each test plays a framework wrapper the way the instrumentation packages do
(``guard.model_turn()`` around the call, report after it when ``needs_report``) over a
real guard, SDK and span processor, and reads the run's token totals from its
``invoke_agent`` span: a turn counted twice or lost shows there.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from typing import Any

from otel_loopguard.guard import LoopGuard
from otel_loopguard.guard.model_turns import ReportedAnswers

from .helpers import Stack, make_stack


def _framework_turn(
    guard: LoopGuard, call_model: Callable[[], Any], input_tokens: int, output_tokens: int
) -> None:
    """What a framework wrapper does around one model call of its agent step."""
    guard.preflight_llm()
    with guard.model_turn() as turn:
        call_model()
    if turn.needs_report:
        guard.observe_llm_response(
            model="framework-view", input_tokens=input_tokens, output_tokens=output_tokens
        )


def _sdk_report(guard: LoopGuard, input_tokens: int, output_tokens: int) -> Callable[[], None]:
    """A provider SDK package below the framework that reports the turn itself."""
    return lambda: guard.observe_llm_response(
        model="sdk-view", input_tokens=input_tokens, output_tokens=output_tokens
    )


def _usage(stack: Stack, agent: str = "writer") -> tuple[int, int]:
    (span,) = stack.spans(f"invoke_agent {agent}")
    return (
        span.attributes.get("gen_ai.usage.input_tokens", 0),
        span.attributes.get("gen_ai.usage.output_tokens", 0),
    )


def test_a_turn_an_sdk_package_reported_is_not_reported_again() -> None:
    stack = make_stack()
    guard = stack.guard
    with guard.agent_run(stack.tracer, "writer"):
        _framework_turn(guard, _sdk_report(guard, 100, 20), 100, 20)
        _framework_turn(guard, lambda: None, 7, 3)  # nothing below: the framework reports
    assert _usage(stack) == (107, 23)


def test_a_turn_another_instrumentation_spanned_is_not_reported_again() -> None:
    """The layer below is any GenAI instrumentation: its ``chat`` span ends inside the
    framework's call and the processor counts it."""
    stack = make_stack()
    guard = stack.guard

    def instrumented_client() -> None:
        with stack.tracer.start_as_current_span(
            "chat gpt-x",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-x",
                "gen_ai.usage.input_tokens": 60,
                "gen_ai.usage.output_tokens": 6,
            },
        ):
            pass

    with guard.agent_run(stack.tracer, "writer"):
        _framework_turn(guard, instrumented_client, 60, 6)
        _framework_turn(guard, instrumented_client, 60, 6)
    assert _usage(stack) == (120, 12)


def test_parallel_model_calls_in_one_run_each_count() -> None:
    """Two model calls of one run overlap (LangGraph branches, ``asyncio.gather``): one
    reported below while the other was in flight must not make the other skip its own
    report (it did while a run-wide step counter decided)."""
    stack = make_stack()
    guard = stack.guard

    async def branches() -> None:
        reported_below = asyncio.Event()

        async def call(report_below: bool, tokens: int) -> None:
            guard.preflight_llm()
            with guard.model_turn() as turn:
                if report_below:
                    _sdk_report(guard, tokens, 1)()
                    reported_below.set()
                else:
                    await reported_below.wait()  # in flight while the other reports
            if turn.needs_report:
                guard.observe_llm_response(input_tokens=tokens, output_tokens=1)

        await asyncio.gather(call(False, 40), call(True, 50))

    with guard.agent_run(stack.tracer, "writer"):
        asyncio.run(branches())
    assert _usage(stack) == (90, 2)


def test_a_report_from_a_worker_thread_reaches_the_turn() -> None:
    """Clients that run the request in an executor thread with the caller's context."""
    stack = make_stack()
    guard = stack.guard

    def in_thread() -> None:
        context = contextvars.copy_context()
        worker = threading.Thread(target=context.run, args=(_sdk_report(guard, 30, 5),))
        worker.start()
        worker.join()

    with guard.agent_run(stack.tracer, "writer"):
        _framework_turn(guard, in_thread, 30, 5)
    assert _usage(stack) == (30, 5)


def test_nested_framework_layers_count_the_turn_once() -> None:
    """A framework whose model is another framework's (an adapter): the inner layer
    reports, the outer one then does not; with an SDK below both, only the SDK reports."""
    stack = make_stack()
    guard = stack.guard
    with guard.agent_run(stack.tracer, "writer"):
        _framework_turn(guard, lambda: _framework_turn(guard, lambda: None, 10, 1), 10, 1)
        _framework_turn(
            guard, lambda: _framework_turn(guard, _sdk_report(guard, 20, 2), 20, 2), 20, 2
        )
    assert _usage(stack) == (30, 3)


def test_outside_a_run_a_turn_needs_no_report_and_leaves_no_trace() -> None:
    stack = make_stack()
    guard = stack.guard
    with guard.model_turn() as turn:
        pass
    assert not turn.needs_report
    with guard.agent_run(stack.tracer, "writer"):
        _framework_turn(guard, lambda: None, 5, 5)  # the earlier turn is not still open
    assert _usage(stack) == (5, 5)


def test_a_sub_agent_run_inside_an_open_turn_does_not_hide_that_turn() -> None:
    """A caller's model answer is still open (a stream being read, a step running its
    tools) when a sub-agent runs: the sub-agent's turns count, and so does the caller's."""
    stack = make_stack()
    guard = stack.guard

    def sub_agent() -> None:
        with guard.agent_run(stack.tracer, "helper"):  # nested: the same run
            _framework_turn(guard, _sdk_report(guard, 11, 1), 11, 1)
            _framework_turn(guard, lambda: None, 12, 2)

    with guard.agent_run(stack.tracer, "writer"):
        _framework_turn(guard, sub_agent, 100, 10)
    assert _usage(stack) == (123, 13)


def test_a_model_call_inside_a_tool_is_not_the_open_turns_report() -> None:
    """Tools that run while the answer asking for them is still open (a streamed answer
    read to its end after its first tool ran): a tool's own model call is its own turn."""
    stack = make_stack()
    guard = stack.guard

    def answer_whose_tool_runs_meanwhile() -> None:
        with guard.tool_call(stack.tracer, "summarise", {"doc": 1}) as call:
            _sdk_report(guard, 7, 7)()  # the tool asks a model itself
            call.set_result("summary")

    with guard.agent_run(stack.tracer, "writer"):
        _framework_turn(guard, answer_whose_tool_runs_meanwhile, 100, 10)
    assert _usage(stack) == (107, 17)


def _late_span(stack: Stack, response_id: str, tokens: tuple[int, int]) -> None:
    """A model span another instrumentation makes after the call returned (LiteLLM's own
    OpenTelemetry callback, in its worker thread): no turn of the wrapper is open then."""
    with stack.tracer.start_as_current_span(
        "litellm_request",
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.response.id": response_id,
            "gen_ai.usage.input_tokens": tokens[0],
            "gen_ai.usage.output_tokens": tokens[1],
        },
    ):
        pass


def _wrapper_call(stack: Stack, response_id: str, tokens: tuple[int, int]) -> None:
    """An SDK package's wrapper: its own ``chat`` span, the answer reported with its id."""
    guard = stack.guard
    span = stack.tracer.start_span("chat gpt-x", attributes={"gen_ai.operation.name": "chat"})
    guard.preflight_llm(span=span)
    with guard.model_turn():
        pass  # the request
    guard.observe_llm_response(
        span=span, input_tokens=tokens[0], output_tokens=tokens[1], response_id=response_id
    )
    span.end()


def test_an_answer_a_late_span_reports_again_counts_once_whichever_comes_first() -> None:
    stack = make_stack()
    with stack.guard.agent_run(stack.tracer, "writer"):
        _wrapper_call(stack, "resp-1", (100, 10))
        _late_span(stack, "resp-1", (100, 10))  # after the wrapper's report
        _late_span(stack, "resp-2", (50, 5))  # before the wrapper's report
        _wrapper_call(stack, "resp-2", (50, 5))
        _late_span(stack, "resp-3", (7, 1))  # reported by one source only: counts
        _wrapper_call(stack, "resp-4", (3, 1))
    assert _usage(stack) == (160, 17)


def test_answers_without_a_response_id_or_in_other_runs_are_not_paired() -> None:
    stack = make_stack()
    with stack.guard.agent_run(stack.tracer, "writer"):
        _wrapper_call(stack, "resp-1", (100, 10))
    with stack.guard.agent_run(stack.tracer, "reader"):
        _late_span(stack, "resp-1", (40, 4))  # same id, another run: its own answer
        _wrapper_call(stack, "", (1, 1))
        _wrapper_call(stack, "", (1, 1))
    assert _usage(stack, "writer") == (100, 10)
    assert _usage(stack, "reader") == (42, 6)


def test_waiting_answers_are_bounded_and_a_pair_is_forgotten_once_matched() -> None:
    answers = ReportedAnswers(max_waiting=2)
    for response_id in ("a", "b", "c"):
        assert answers.first_report("run", response_id, by_wrapper=True)
    assert answers.first_report("run", "a", by_wrapper=False)  # "a" was dropped: counts
    assert not answers.first_report("run", "c", by_wrapper=False)  # the same answer again
    assert answers.first_report("run", "c", by_wrapper=False)  # a third report counts


def test_a_cached_answer_reported_again_pairs_report_by_report() -> None:
    """A cache hit answers with the same response id: two calls, each reported by both
    sources, in any order, count twice."""
    stack = make_stack()
    with stack.guard.agent_run(stack.tracer, "writer"):
        _wrapper_call(stack, "cached", (100, 10))
        _wrapper_call(stack, "cached", (100, 10))  # the cache's answer to the same request
        _late_span(stack, "cached", (100, 10))
        _late_span(stack, "cached", (100, 10))
    assert _usage(stack) == (200, 20)
