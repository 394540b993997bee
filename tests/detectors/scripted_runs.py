"""Scripted agent runs for the call-level detector tests: build events, feed a detector.

The events are made with the real builders of :mod:`otel_loopguard.engine.events` (so real
signatures), and fed to a real detector the way the monitor does: ``new_state`` once, then
per event the monitor's own pairing of results with their calls
(:func:`~otel_loopguard.engine.detectors.call_tracking.pair_tool_event`) and ``observe``;
or, as :func:`worst_action`, to the real monitor with its default policy.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator
from typing import Any

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Action, Signal
from otel_loopguard.engine.detectors.base import Detector, RunCounters
from otel_loopguard.engine.detectors.call_tracking import PendingCalls, pair_tool_event
from otel_loopguard.engine.events import (
    ErrorInfo,
    Event,
    EventKind,
    tool_call,
    tool_error,
    tool_result,
)
from otel_loopguard.engine.monitor import Monitor

RUN = "run-1"
_ids = itertools.count()
Step = tuple[str, dict, object]  # tool, arguments, output (an ErrorInfo for a failure)


def call(tool: str, arguments: Any = None, *, call_id: str | None = None) -> Event:
    return tool_call(RUN, tool, arguments, call_id=call_id)


def result(tool: str, output: Any = None, *, call_id: str | None = None, **extra: Any) -> Event:
    return tool_result(RUN, tool, output, call_id=call_id, **extra)


def error(
    tool: str,
    message: str | None = None,
    *,
    status: int | None = None,
    type: str | None = None,
    call_id: str | None = None,
) -> Event:
    return tool_error(
        RUN, tool, ErrorInfo(type=type, message=message, status_code=status), call_id=call_id
    )


def exchange(tool: str, arguments: Any, output: Any) -> list[Event]:
    """One answered tool call (call + result), paired by a fresh call id."""
    call_id = f"c{next(_ids)}"
    return [call(tool, arguments, call_id=call_id), result(tool, output, call_id=call_id)]


def failing(tool: str, arguments: Any, message: str, **error_fields: Any) -> list[Event]:
    call_id = f"c{next(_ids)}"
    return [
        call(tool, arguments, call_id=call_id),
        error(tool, message, call_id=call_id, **error_fields),
    ]


def edit_then_test(patches: Iterable[str], test_output: str) -> list[Event]:
    """A coding agent's edit → run the tests loop: per patch, an ``edit_file`` call of
    ``app.py`` answered ``ok``, then ``pytest -q`` answered ``test_output``."""
    events: list[Event] = []
    for patch in patches:
        events += exchange("edit_file", {"path": "app.py", "patch": patch}, "ok")
        events += exchange("bash", {"command": "pytest -q"}, test_output)
    return events


def llm(requested: Iterable[Event] | None = None) -> Event:
    """A model turn; ``requested`` are the tool calls it asked for (their signatures)."""
    signatures = None if requested is None else tuple(e.signature for e in requested)
    return Event(EventKind.LLM_RESPONSE, RUN, requested_tool_calls=signatures)


def handoff(source: str, target: str) -> Event:
    return Event(EventKind.HANDOFF, RUN, actor=source, target_agent=target)


def turns(steps: list[Step]) -> Iterator[Event]:
    """One model turn per step: the response asking for the call, the call, its outcome."""
    for number, (tool, arguments, outcome) in enumerate(steps):
        call_id = f"call_{number}"
        asked = call(tool, arguments, call_id=call_id)
        yield Event(EventKind.LLM_RESPONSE, RUN, requested_tool_calls=(asked.signature,))
        yield asked
        if isinstance(outcome, ErrorInfo):
            yield tool_error(RUN, tool, outcome, call_id=call_id)
        else:
            yield result(tool, outcome, call_id=call_id)


def worst_action(
    steps: list[Step], config: LoopGuardConfig | None = None
) -> tuple[Action, set[str]]:
    """The strongest action the real monitor (default policy) takes over ``steps``, and by whom."""
    monitor = Monitor(config or LoopGuardConfig())
    worst, detectors = Action.CONTINUE, set()
    for event in turns(steps):
        decision = monitor.observe(event)
        if decision.action > worst:
            worst, detectors = decision.action, set(decision.detectors)
    return worst, detectors


class Driver:
    """One detector and one run's state, fed like the monitor feeds them."""

    def __init__(self, factory: Any, **settings: Any) -> None:
        self.config = LoopGuardConfig(**settings)
        self.detector: Detector = factory(self.config)
        self.state = self.detector.new_state()
        self.counters = RunCounters()
        self.pending = PendingCalls()  # the run's calls awaiting results, as the monitor keeps

    def feed(self, events: Iterable[Event]) -> list[Signal]:
        signals = []
        for event in events:
            pair_tool_event(event, event.kind, self.pending, self.counters)
            kinds = getattr(self.detector, "event_kinds", None)
            if kinds is not None and event.kind not in kinds:
                continue
            signal = self.detector.observe(event, self.state, self.counters)
            if signal is not None:
                signals.append(signal)
        return signals

    def reload(self) -> None:
        """Export the state through JSON and restore it, as a reloaded conversation does."""
        data = json.loads(json.dumps(self.detector.export_state(self.state)))
        self.state = self.detector.restore_state(data)
        self.pending = PendingCalls.from_json(json.loads(json.dumps(self.pending.to_json())))
