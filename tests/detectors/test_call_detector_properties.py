"""Properties of the six call-level detectors over arbitrary event sequences.

For any sequence of calls, results, errors, model turns and handoffs: no detector raises,
every score is in [0, 1], and exporting the state mid-run (through JSON) and restoring it
changes nothing: the restored run raises exactly the signals the uninterrupted one does.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from scripted_runs import RUN, Driver, call, error, handoff, result

from otel_loopguard.engine.detectors import CALL_DETECTORS
from otel_loopguard.engine.events import Event, EventKind

FACTORIES = CALL_DETECTORS
TOOLS = ("search", "fetch", "edit_file")
AGENTS = ("triage", "billing", "coder")

small = st.integers(min_value=0, max_value=2)
call_ids = st.none() | st.sampled_from(("c1", "c2", "c3"))


def _event(spec: tuple[Any, ...]) -> Event:
    kind, tool, value, call_id = spec
    tool_name = TOOLS[tool]
    if kind == "call":
        return call(tool_name, {"q": f"query {value}"}, call_id=call_id)
    if kind == "result":
        return result(tool_name, f"answer {value}", call_id=call_id)
    if kind == "error":
        message = ("Not Found", "timed out", "mystery")[value]
        return error(tool_name, message, call_id=call_id)
    if kind == "turn":
        requested = None if value == 2 else tuple(f"sig{tool}" for _ in range(value + 1))
        return Event(EventKind.LLM_RESPONSE, RUN, requested_tool_calls=requested)
    return handoff(AGENTS[tool], AGENTS[value])


events = st.lists(
    st.tuples(
        st.sampled_from(("call", "call", "result", "result", "error", "turn", "handoff")),
        small,
        small,
        call_ids,
    ),
    max_size=80,
)


@settings(max_examples=60, deadline=None)
@given(specs=events, split=st.integers(min_value=0, max_value=80))
def test_reload_mid_run_changes_nothing_and_nothing_raises(
    specs: list[tuple[Any, ...]], split: int
) -> None:
    sequence = [_event(spec) for spec in specs]
    for factory in FACTORIES:
        straight = Driver(factory, repetition_threshold=2, history_size=8)
        reloaded = Driver(factory, repetition_threshold=2, history_size=8)
        expected = straight.feed(sequence)
        got = reloaded.feed(sequence[:split])
        reloaded.reload()
        got += reloaded.feed(sequence[split:])
        assert got == expected, factory.name
        assert all(0.0 <= signal.score <= 1.0 for signal in expected)
        json.dumps(straight.detector.export_state(straight.state))  # JSON-able at any point
