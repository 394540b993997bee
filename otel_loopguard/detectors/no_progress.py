"""No progress: the same call keeps returning the same (masked) output.

For each call signature the detector remembers the last output signature and how often it
came back unchanged; it fires when an unchanged output repeats ``no_progress_threshold``
times (default 2: the third identical answer to the identical call).

Iteration is not a loop, so a repeat only counts when nothing new happened since the
previous answer. The run keeps a *novelty epoch* that moves whenever a call signature is
seen for the first time (new work: a different edit, a different query) or any call's
output changes (the world moved: a poll shows progress). An unchanged output counts as a
repeat only within the same epoch. Hence

* polling whose output changes never fires (every change resets);
* edit → run tests → edit → run tests never fires while the edits differ, even when the
  test output is identical each time;
* A → B → A → B with unchanged outputs fires (after one round that establishes the epoch);
* retry-then-success never fires: only results count, errors are the permanent-failure
  detector's job, and a success with a new output resets the call.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from otel_loopguard.config import LoopGuardConfig
from otel_loopguard.decisions import Signal
from otel_loopguard.detectors.base import RunCounters
from otel_loopguard.detectors.call_tracking import (
    PendingCalls,
    growing_score,
    is_error_result,
    table_from_json,
    table_to_json,
    touch,
)
from otel_loopguard.events import Event, EventKind
from otel_loopguard.signatures import describe_output


class NoProgressState:
    __slots__ = ("epoch", "outputs", "pending", "seen_calls")

    def __init__(self) -> None:
        self.pending = PendingCalls()
        self.seen_calls: OrderedDict[str, int] = OrderedDict()
        # call signature -> [output signature, unchanged repeats, epoch of the last answer]
        self.outputs: OrderedDict[str, list[Any]] = OrderedDict()
        self.epoch = 0


class NoProgressDetector:
    """Identical calls answered with identical outputs, with nothing new in between."""

    name = "no_progress"
    event_kinds = frozenset(
        {EventKind.TOOL_CALL, EventKind.TOOL_RESULT, EventKind.TOOL_ERROR}
    )  # the monitor calls us for these only

    def __init__(self, config: LoopGuardConfig) -> None:
        self.config = config
        self.threshold = config.no_progress_threshold
        self.cap = config.history_size

    def new_state(self) -> NoProgressState:
        return NoProgressState()

    def observe(self, event: Event, state: NoProgressState, counters: RunCounters) -> Signal | None:
        kind = event.kind
        if kind == EventKind.TOOL_CALL:
            if event.signature not in state.seen_calls:
                state.epoch += 1
            touch(state.seen_calls, event.signature, 1, self.cap)
            state.pending.add(event)
            return None
        if kind == EventKind.TOOL_ERROR:
            state.pending.pop(event)
            return None
        if kind != EventKind.TOOL_RESULT:
            return None
        call = state.pending.pop(event)
        if call is None or is_error_result(event):
            return None
        output = event.signature
        entry = state.outputs.get(call)
        if entry is not None and entry[0] == output and entry[2] == state.epoch:
            entry[1] += 1
            state.outputs.move_to_end(call)
        else:
            if entry is None or entry[0] != output:
                state.epoch += 1  # a new or changed answer is progress
            touch(state.outputs, call, [output, 0, state.epoch], self.cap)
            return None
        repeats = entry[1]
        if repeats < self.threshold:
            return None
        tool = event.tool_name or "a tool"
        evidence: dict[str, Any] = {
            "tool": event.tool_name,
            "repeats": repeats,
            "threshold": self.threshold,
            "call_signature": call,
            "output_signature": output,
        }
        if self.config.capture_content:
            evidence["output"] = describe_output(event.output, self.config.signature_max_chars)
        return Signal(
            detector=self.name,
            kind=self.name,
            score=growing_score(repeats, self.threshold, 0.6),
            message=f"{tool} returned the same result {repeats + 1} times for the same call",
            evidence=evidence,
        )

    def export_state(self, state: NoProgressState) -> dict[str, Any]:
        return {
            "pending": state.pending.to_json(),
            "seen": list(state.seen_calls),
            "outputs": table_to_json(state.outputs),
            "epoch": state.epoch,
        }

    def restore_state(self, data: dict[str, Any]) -> NoProgressState:
        state = NoProgressState()
        state.pending = PendingCalls.from_json(data.get("pending"))
        for call in (data.get("seen") or [])[-self.cap :]:
            state.seen_calls[str(call)] = 1
        state.outputs = table_from_json(data.get("outputs"), self.cap)
        state.epoch = int(data.get("epoch") or 0)
        return state
