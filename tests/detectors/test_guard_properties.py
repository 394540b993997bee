"""Properties every budget and guard detector keeps, on random event streams.

A reloaded session must behave exactly as if it had never been saved: after
``export_state`` -> JSON -> ``restore_state`` at any point, the same later events produce
the same signals. Scores stay in [0, 1], exported state stays small however long the
run, and no evidence holds raw tool output unless content capture is on.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Signal
from otel_loopguard.engine.detectors import GUARD_DETECTORS
from otel_loopguard.engine.detectors.base import RunCounters
from otel_loopguard.engine.events import ErrorInfo, Event, EventKind

DETECTORS = GUARD_DETECTORS
SECRET = "s3cr3t-payload"
OUTPUTS = (
    f"ok {SECRET}",
    f"bash: {SECRET}: command not found",
    f"ModuleNotFoundError: No module named '{SECRET}'",
    f"cat: {SECRET}: No such file or directory",
    {"stdout": SECRET, "exit_code": 127},
    f"3 passed {SECRET}",
)
TOOLS = ("read_file", "fs.grep", "bash", "terminal__exec", "write_file", "search")

llm_responses = st.builds(
    lambda finish, empty, requested, tokens: Event(
        EventKind.LLM_RESPONSE,
        "run",
        model="m",
        finish_reason=finish,
        empty=empty,
        requested_tool_calls=requested,
        output_tokens=tokens,
    ),
    st.sampled_from([None, "stop", "length", "MAX_TOKENS", "tool_calls", "end_turn"]),
    st.booleans(),
    st.sampled_from([None, (), ("call-a",)]),
    st.integers(0, 400),
)
tool_calls = st.builds(
    lambda tool: Event(EventKind.TOOL_CALL, "run", tool_name=tool, arguments=SECRET),
    st.sampled_from(TOOLS),
)
tool_results = st.builds(
    lambda tool, output: Event(EventKind.TOOL_RESULT, "run", tool_name=tool, output=output),
    st.sampled_from(TOOLS),
    st.sampled_from(OUTPUTS),
)
tool_errors = st.builds(
    lambda tool, kind: Event(
        EventKind.TOOL_ERROR, "run", tool_name=tool, error=ErrorInfo(kind, SECRET, 404)
    ),
    st.sampled_from(TOOLS),
    st.sampled_from(["HTTPError", "ModuleNotFoundError", None]),
)
streams = st.lists(st.one_of(llm_responses, tool_calls, tool_results, tool_errors), max_size=60)
configs = st.builds(
    lambda n, budget, timeout: LoopGuardConfig(
        max_tokens_recoveries=n % 3,
        max_premature_end_recoveries=n % 2,
        shell_failure_threshold=1 + n % 3,
        read_only_loop_threshold=2 + n % 3,
        max_steps=n,
        max_tool_calls=2 * n,
        token_budget=budget,
        reserve_tokens=300,
        cost_limit=0.01 if budget else 0.0,
        timeout=timeout,
    ),
    st.integers(0, 6),
    st.sampled_from([0, 1000, 5000]),
    st.sampled_from([0.0, 3.0]),
)


def _feed(detector, state, events: list[Event], start: int) -> list[tuple[Signal | None, str]]:
    """Each event's signal and the exported state right after it."""
    trace = []
    counters = RunCounters(started_at=0.0)
    for index, event in enumerate(events[:start]):  # rebuild the counters up to `start`
        _count(counters, event, index)
    for index, event in enumerate(events[start:], start):
        _count(counters, event, index)
        signal = detector.observe(event, state, counters)
        trace.append((signal, json.dumps(detector.export_state(state), sort_keys=True)))
    return trace


def _count(counters: RunCounters, event: Event, index: int) -> None:
    """What the monitor does before detectors see an event (a cost of 1e-5 per token)."""
    counters.events += 1
    counters.now = index * 0.25
    if event.kind is EventKind.TOOL_CALL:
        counters.tool_calls += 1
    elif event.kind is EventKind.LLM_RESPONSE:
        counters.steps += 1
        counters.output_tokens += event.output_tokens or 0
        counters.cost = counters.total_tokens * 1e-5


@settings(max_examples=200, deadline=None)
@given(configs, streams)
def test_export_is_complete_at_every_point_of_a_run(
    config: LoopGuardConfig, events: list[Event]
) -> None:
    for factory in DETECTORS:
        detector = factory(config)
        state = detector.new_state()
        counters = RunCounters()
        for index, event in enumerate(events):
            _count(counters, event, index)
            detector.observe(event, state, counters)
            exported = json.dumps(detector.export_state(state))
            assert detector.restore_state(json.loads(exported)) == state, detector.name


@settings(max_examples=150, deadline=None)
@given(configs, streams, st.integers(0, 60))
def test_restored_state_continues_exactly_like_the_original(
    config: LoopGuardConfig, events: list[Event], cut: int
) -> None:
    cut %= len(events) + 1
    for factory in DETECTORS:
        detector = factory(config)
        state = detector.new_state()
        before = _feed(detector, state, events[:cut], 0)
        exported = json.dumps(detector.export_state(state))
        assert len(exported) < 1024
        restored = detector.restore_state(json.loads(exported))
        after_original = _feed(detector, state, events, cut)
        after_restored = _feed(detector, restored, events, cut)
        assert after_restored == after_original, detector.name
        for signal, _ in [*before, *after_original]:
            if signal is None:
                continue
            assert signal.detector == detector.name
            assert 0.0 <= signal.score <= 1.0
            assert SECRET not in json.dumps(signal.evidence, default=str)
            assert SECRET not in signal.message + (signal.recommendation or "")


def test_state_stays_small_over_a_long_run() -> None:
    config = LoopGuardConfig(token_budget=10**9, cost_limit=1e9, max_steps=10**9, timeout=1e9)
    pattern = [
        Event(EventKind.LLM_RESPONSE, "run", finish_reason="length", output_tokens=10),
        Event(EventKind.TOOL_CALL, "run", tool_name="read_file"),
        Event(EventKind.TOOL_ERROR, "run", tool_name="bash", error=ErrorInfo("OSError")),
        Event(EventKind.TOOL_RESULT, "run", tool_name="bash", output="sh: 1: x: not found"),
        Event(EventKind.LLM_RESPONSE, "run", finish_reason="stop", empty=True),
    ]
    for factory in DETECTORS:
        detector = factory(config)
        state = detector.new_state()
        counters = RunCounters()
        for index in range(20_000):
            counters.events += 1
            detector.observe(pattern[index % len(pattern)], state, counters)
        assert len(json.dumps(detector.export_state(state))) < 512, detector.name
