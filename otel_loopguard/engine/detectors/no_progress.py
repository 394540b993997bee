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

from typing import Any, ClassVar

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Signal
from otel_loopguard.engine.detectors.base import RunCounters, mypyc_attr
from otel_loopguard.engine.detectors.call_tracking import growing_score
from otel_loopguard.engine.detectors.fingerprint_table import FingerprintTable
from otel_loopguard.engine.events import Event, EventKind
from otel_loopguard.engine.signatures import describe_output

_NO_OUTPUT = 0  # a call seen, not answered yet
_EPOCH_MASK = 0xFFFFFFFF  # epochs are only compared for equality: wrapping is harmless


# Enum members as module constants for the per-event comparisons (see call_tracking).
_TOOL_CALL = EventKind.TOOL_CALL
_TOOL_RESULT = EventKind.TOOL_RESULT


class NoProgressState:
    __slots__ = ("calls", "epoch")

    def __init__(self, history_size: int) -> None:
        # call fingerprint -> (output fingerprint, unchanged repeats, epoch of the last answer)
        self.calls = FingerprintTable(history_size, "IHI")
        self.epoch = 0


@mypyc_attr(allow_interpreted_subclasses=True)
class NoProgressDetector:
    """Identical calls answered with identical outputs, with nothing new in between."""

    name: ClassVar[str] = "no_progress"
    # the monitor calls us for these only (it pairs results with their calls itself)
    event_kinds: ClassVar[frozenset[EventKind]] = frozenset(
        {EventKind.TOOL_CALL, EventKind.TOOL_RESULT}
    )

    def __init__(self, config: LoopGuardConfig) -> None:
        self.config = config
        self.threshold = config.no_progress_threshold
        self.cap = config.history_size

    def new_state(self) -> NoProgressState:
        return NoProgressState(self.cap)

    def observe(self, event: Event, state: NoProgressState, counters: RunCounters) -> Signal | None:
        kind = event.kind
        if kind is _TOOL_CALL:
            call = counters.call_key
            if state.calls.get(call) is None:  # a first-time call is new work
                state.epoch = (state.epoch + 1) & _EPOCH_MASK
                state.calls.insert(call, _NO_OUTPUT, 0, 0)
            return None
        if kind is not _TOOL_RESULT:
            return None  # errors are the permanent-failure detector's
        call = counters.call_key
        if not call or counters.failed:
            return None
        output = counters.outcome_key
        calls = state.calls
        entry = calls.get(call)
        if entry is None or entry[0] != output or entry[2] != state.epoch:
            if entry is None or entry[0] != output:
                state.epoch = (state.epoch + 1) & _EPOCH_MASK  # a new or changed answer
            if entry is None:
                calls.insert(call, output, 0, state.epoch)
            else:
                calls.update(call, output, 0, state.epoch)
            return None
        repeats = min(entry[1] + 1, FingerprintTable.MAX_COUNT)
        calls.update(call, output, repeats, state.epoch)
        if repeats < self.threshold:
            return None
        tool = event.tool_name or "a tool"
        evidence: dict[str, Any] = {
            "tool": event.tool_name,
            "repeats": repeats,
            "threshold": self.threshold,
            "output_signature": event.signature,
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
            "calls": state.calls.to_json(),
            "epoch": state.epoch,
        }

    def restore_state(self, data: dict[str, Any]) -> NoProgressState:
        state = NoProgressState(self.cap)
        state.calls.load_json(data.get("calls"))
        state.epoch = int(data.get("epoch") or 0) & _EPOCH_MASK
        return state
