"""Tiny real detectors and a fake clock for testing the monitor's mechanics.

These are complete implementations of the detector contract (not mocks): they keep
per-run state, export and restore it. They exist so that monitor tests exercise counting,
dispatch, error containment and stopping without depending on the behaviour of a
particular loop detector. The fake clock stands in for time, which a test cannot wait out.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from otel_loopguard.engine.decisions import Signal
from otel_loopguard.engine.detectors.base import RunCounters
from otel_loopguard.engine.events import Event, EventKind


class FakeClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Tally:
    events: int = 0
    seen_counter_events: int = 0


class CountingDetector:
    """Counts the events it sees per run, with a deliberately non-atomic update.

    It reads the tally, gives other threads the GIL (``time.sleep(0)``), then writes the
    tally back: that loses updates unless the monitor serializes one run's events, which
    is what concurrency tests check.
    """

    name = "counting"

    def __init__(self, event_kinds: frozenset[EventKind] | None = None) -> None:
        if event_kinds is not None:
            self.event_kinds = event_kinds

    def new_state(self) -> Tally:
        return Tally()

    def observe(self, event: Event, state: Tally, counters: RunCounters) -> Signal | None:
        seen = state.events
        state.seen_counter_events = counters.events
        time.sleep(0)
        state.events = seen + 1
        return None

    def export_state(self, state: Tally) -> dict[str, Any]:
        return {"events": state.events}

    def restore_state(self, data: dict[str, Any]) -> Tally:
        return Tally(events=int(data.get("events", 0)))


class SignatureTrigger:
    """Emits a fixed signal whenever an event's signature equals ``trigger``."""

    def __init__(
        self,
        trigger: str,
        detector: str,
        kind: str | None = None,
        score: float = 0.9,
        recommendation: str | None = None,
    ) -> None:
        self.name = f"trigger_{detector}_{trigger}"
        self.trigger = trigger
        self.signal = Signal(
            detector,
            kind or detector,
            score,
            f"{detector} on {trigger}",
            recommendation=recommendation,
        )

    def new_state(self) -> None:
        return None

    def observe(self, event: Event, state: None, counters: RunCounters) -> Signal | None:
        return self.signal if event.signature == self.trigger else None

    def export_state(self, state: None) -> dict[str, Any]:
        return {}

    def restore_state(self, data: dict[str, Any]) -> None:
        return None


class RaisingDetector:
    """A broken detector: raises on every event."""

    name = "raising"

    def new_state(self) -> None:
        return None

    def observe(self, event: Event, state: None, counters: RunCounters) -> Signal | None:
        raise RuntimeError("detector bug")

    def export_state(self, state: None) -> dict[str, Any]:
        return {}

    def restore_state(self, data: dict[str, Any]) -> None:
        return None


def call(run_id: str, signature: str = "tool:x()", tool: str = "x") -> Event:
    return Event(EventKind.TOOL_CALL, run_id, tool_name=tool, signature=signature)


def result(run_id: str, signature: str = "result:ok", tool: str = "x") -> Event:
    return Event(EventKind.TOOL_RESULT, run_id, tool_name=tool, signature=signature)


def llm(run_id: str, input_tokens: int = 0, output_tokens: int = 0, model: str = "m") -> Event:
    return Event(
        EventKind.LLM_RESPONSE,
        run_id,
        model=model,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        finish_reason="stop",
    )
