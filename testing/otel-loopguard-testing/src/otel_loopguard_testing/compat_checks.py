"""What the compat suites (``compat/<name>/``: a third-party instrumentation beside our
core or package) check alike after running their agents: a looping one interrupted
(enforce mode) or its STOP recorded (observe mode), a productive one left alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .harness import Harness
from .metrics import metric_counter

#: ``start()`` -> ``(run, executed)``: ``run()`` runs one invocation of a fresh looping
#: agent (it must raise ``LoopGuardInterrupt``), ``executed()`` how many times its tool
#: body ran
Start = Callable[[], tuple[Callable[[], Any], Callable[[], int]]]


def assert_interrupted_in_each_invocation(
    harness: Harness, invocations: int, start: Start, *, most: int = 4
) -> None:
    """``invocations`` looping runs under one application span: each is interrupted after
    at least one and at most ``most`` real executions, leaves the application's span
    current (no span of theirs or ours left open as the context), every span started ended
    exactly once, and ``loopguard.internal_errors`` stays 0."""
    import pytest
    from opentelemetry import trace

    from otel_loopguard import LoopGuardInterrupt

    errors = metric_counter(harness)
    with harness.app_tracer().start_as_current_span("handle request") as app:
        for _ in range(invocations):
            run, executed = start()
            with pytest.raises(LoopGuardInterrupt):
                run()
            assert 1 <= executed() <= most, executed()
            assert trace.get_current_span() is app  # no span left current
    assert errors("loopguard.internal_errors") == 0
    harness.assert_every_span_ended_once()


def assert_interrupted(
    harness: Harness,
    start: Start,
    *,
    invocations: int = 1,
    agent: str | None = None,
    detector: str = "no_progress",
    most: int = 4,
) -> Callable[[str], float]:
    """``invocations`` looping runs with no span of the application around them: each is
    interrupted by ``detector`` after at least one and at most ``most`` real executions
    and leaves nothing attached as the context; no span is left open, and
    ``loopguard.internal_errors`` stays 0. With ``agent``: each invocation is one run of
    ours (an ``invoke_agent {agent}`` span), ``stopped``. Returns the
    :func:`metric_counter` it read them with, for the test's own counts."""
    import pytest
    from opentelemetry import trace

    from otel_loopguard import LoopGuardInterrupt

    count = metric_counter(harness)
    for _ in range(invocations):
        run, executed = start()
        with pytest.raises(LoopGuardInterrupt) as stopped:
            run()
        assert detector in stopped.value.decision.detectors, stopped.value.decision
        assert 1 <= executed() <= most, executed()
        assert not trace.get_current_span().get_span_context().is_valid  # nothing attached
    if agent is not None:
        runs = harness.named(f"invoke_agent {agent}")
        assert [s.attributes["loopguard.run.state"] for s in runs] == ["stopped"] * invocations
        assert count("loopguard.runs") == invocations
    assert harness.open_spans() == []
    assert count("loopguard.internal_errors") == 0
    return count


def executions_at_first_stop(harness: Harness, executed: Callable[[], int]) -> Callable[[], int]:
    """Watch the guard's decisions (observe mode, the run goes on): returns a function
    giving ``executed()`` as it was when the first STOP was taken (it fails when none
    was)."""
    at_stop: list[int] = []

    def on_decision(decision: Any, _event: Any) -> None:
        if decision.action.value == "stop" and not at_stop:
            at_stop.append(executed())

    harness.guard.on_decision(on_decision)

    def first() -> int:
        assert at_stop, "no STOP was decided"
        return at_stop[0]

    return first


def assert_stopped_then_completed(harness: Harness, count: Callable[[str], float]) -> Any:
    """A looping invocation, then a productive one, under one application span: two runs
    of their own (two ids), the first ``stopped``, the second ``completed`` (the first
    one's STOP is not its own); ``loopguard.internal_errors`` stays 0 (``count``: the
    test's :func:`metric_counter`). Returns the second run's span."""
    first, second = harness.named("loopguard.run")
    assert first.attributes["loopguard.run.id"] != second.attributes["loopguard.run.id"]
    assert first.attributes["loopguard.run.state"] == "stopped"
    assert second.attributes["loopguard.run.state"] == "completed"
    assert count("loopguard.runs") == 2
    assert count("loopguard.internal_errors") == 0
    return second


def assert_no_stop_on_their_tools(
    harness: Harness, count: Callable[[str], float], tools: list[Any], calls: int, hidden: bool
) -> None:
    """A productive run beside an OpenInference instrumentation: ``calls`` tool spans of
    theirs (``tools``), whose result reads ``__REDACTED__`` exactly when their content is
    ``hidden``; no STOP, and ``loopguard.internal_errors`` stays 0."""
    assert len(tools) == calls
    assert (tools[0].attributes["output.value"] == "__REDACTED__") is hidden
    assert not harness.decision_events("stop")
    assert count("loopguard.internal_errors") == 0


def openinference_spans(harness: Harness, kind: str) -> list[Any]:
    """An OpenInference instrumentation's spans of ``kind`` (``TOOL``, ``LLM``, ...)."""
    return [s for s in harness.spans() if s.attributes.get("openinference.span.kind") == kind]


def assert_loop_observed(harness: Harness, start: Start, *, executions: int, most: int = 4) -> Any:
    """Observe mode, one looping run: it ran to its own end (``executed()`` is
    ``executions``), the guard's first STOP came within ``most`` executions, its one
    ``loopguard.run`` was recorded ``stopped``, ``loopguard.internal_errors`` stays 0.
    Returns what ``run()`` returned."""
    count = metric_counter(harness)
    run, executed = start()
    at_stop = executions_at_first_stop(harness, executed)
    result = run()
    assert executed() == executions  # observe mode: the run goes on
    assert at_stop() <= most
    (span,) = harness.named("loopguard.run")
    assert span.attributes["loopguard.run.state"] == "stopped"
    assert count("loopguard.internal_errors") == 0
    return result


def assert_completed_unstopped(harness: Harness, count: Callable[[str], float], agent: str) -> None:
    """A productive run beside our package: the run of ``agent`` ``completed``, no STOP,
    ``loopguard.internal_errors`` stays 0 (``count``: the test's :func:`metric_counter`)."""
    assert harness.run_state(agent) == "completed"
    assert not harness.decision_events("stop")
    assert count("loopguard.internal_errors") == 0


def assert_budget_exceeded(
    harness: Harness, count: Callable[[str], float], stopped: Any, agent: str, usage: Any
) -> None:
    """A token budget beside our package: the interrupt (``stopped``: the
    ``pytest.raises(LoopGuardInterrupt)`` info) came from the budget alone, the run of
    ``agent`` ended ``budget_exceeded`` with ``usage`` (input, output) tokens, each turn
    counted once; ``loopguard.internal_errors`` stays 0."""
    assert stopped.value.decision.detectors == ("budget",)
    assert harness.run_state(agent) == "budget_exceeded"
    assert harness.run_usage(agent) == usage
    assert count("loopguard.internal_errors") == 0


def assert_refused_request_is_no_step(
    harness: Harness, conversation: str, steps: int, usage: tuple[int, int]
) -> None:
    """A request our pre-flight refused (a step limit reached, enforce mode) left no step:
    the run of ``conversation`` (it outlives its agent span) has ``steps`` steps and
    ``usage`` (input, output) tokens, those of the answers that came, and
    ``loopguard.internal_errors`` stayed 0."""
    counts = harness.guard.monitor.run_counts(conversation)
    assert counts is not None, conversation
    found_steps, _tool_calls, input_tokens, output_tokens, _cost = counts
    assert found_steps == steps
    assert (input_tokens, output_tokens) == usage
    assert metric_counter(harness)("loopguard.internal_errors") == 0
    assert harness.open_spans() == []
