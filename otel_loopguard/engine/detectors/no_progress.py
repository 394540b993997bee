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
* retry-then-success never fires: a success with a new output resets the call;
* a note tool (``think``: :mod:`~otel_loopguard.engine.detectors.note_tools`) between two
  identical answers is neither: a thought written down is not new work.

Waiting is not looping: an agent that polls a CI run with a ``sleep`` between polls sees
``in_progress`` several times before the answer changes. A repeat that comes after the run
waited (a wait tool or a shell command that sleeps since the call's previous answer, or
the call itself waits, or :data:`~otel_loopguard.engine.detectors.waiting.WAIT_SECONDS`
passed between two tool events: :mod:`~otel_loopguard.engine.detectors.waiting`) counts
against ``poll_patience`` (10) instead of ``no_progress_threshold``; a repeat with no wait
before it counts against the usual threshold again.

A failure is an outcome too: when the instrumentation records a failed call as a span
error (status ERROR, ``error.type``, an ``exception`` event) there is no result, and the
error (type, status and masked message) is what the call returned. The same call failing
with the same message, with nothing new in between, is no progress whatever the error
class; only failures classified *retryable* (timeouts, 429, 5xx: retrying may help) are
left to the permanent-failure detector, which pauses first and stops later. Distinct calls
failing, or the same call failing differently, are not repeats.
"""

from __future__ import annotations

from typing import Any, ClassVar

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Signal
from otel_loopguard.engine.detectors.base import RunCounters, mypyc_attr
from otel_loopguard.engine.detectors.call_tracking import growing_score
from otel_loopguard.engine.detectors.fingerprint_table import FingerprintTable
from otel_loopguard.engine.detectors.note_tools import note_tools
from otel_loopguard.engine.detectors.permanent_failure import classify_error, error_of_result
from otel_loopguard.engine.detectors.waiting import WAIT_SECONDS, WaitRule
from otel_loopguard.engine.events import ErrorInfo, Event, EventKind
from otel_loopguard.engine.signatures import describe_output

_NO_OUTPUT = 0  # a call seen, not answered yet
_EPOCH_MASK = 0xFFFFFFFF  # epochs are only compared for equality: wrapping is harmless


# Enum members as module constants for the per-event comparisons (see call_tracking).
_TOOL_CALL = EventKind.TOOL_CALL
_TOOL_RESULT = EventKind.TOOL_RESULT
_TOOL_ERROR = EventKind.TOOL_ERROR


class NoProgressState:
    __slots__ = ("calls", "epoch", "last_time", "waits")

    def __init__(self, history_size: int) -> None:
        # call fingerprint -> (output fingerprint, unchanged repeats, epoch of the last
        # answer, waits seen at the last answer)
        self.calls = FingerprintTable(history_size, "IHII")
        self.epoch = 0
        self.waits = 0  # moves at every wait (a wait call, a sleeping command, idle time)
        self.last_time = 0.0  # counters.now at the last tool event (0: none yet)


@mypyc_attr(allow_interpreted_subclasses=True)
class NoProgressDetector:
    """Identical calls answered with identical outputs, with nothing new in between."""

    name: ClassVar[str] = "no_progress"
    # the monitor calls us for these only (it pairs results with their calls itself)
    event_kinds: ClassVar[frozenset[EventKind]] = frozenset(
        {EventKind.TOOL_CALL, EventKind.TOOL_RESULT, EventKind.TOOL_ERROR}
    )

    def __init__(self, config: LoopGuardConfig) -> None:
        self.config = config
        self.threshold = config.no_progress_threshold
        self.patience = max(config.poll_patience, self.threshold)
        self.cap = config.history_size
        self._wait = WaitRule(config)
        self._note = note_tools(config)

    def new_state(self) -> NoProgressState:
        return NoProgressState(self.cap)

    def observe(self, event: Event, state: NoProgressState, counters: RunCounters) -> Signal | None:
        kind = event.kind
        now = counters.now
        if kind is _TOOL_CALL:
            last, state.last_time = state.last_time, now
            if (last and now - last >= WAIT_SECONDS) or self._wait.call_waits(
                event.tool_name, event.arguments
            ):
                state.waits = (state.waits + 1) & _EPOCH_MASK
            if self._note[event.tool_name]:
                return None  # a thought written down is not new work
            call = counters.call_key
            if state.calls.get(call) is None:  # a first-time call is new work
                state.epoch = (state.epoch + 1) & _EPOCH_MASK
                state.calls.insert(call, _NO_OUTPUT, 0, 0, state.waits)
            return None
        state.last_time = now
        call = counters.call_key
        if not call or self._note[event.tool_name]:
            return None  # a note tool's answer is no news of progress either
        failed = counters.failed
        if failed and self._retryable(event):
            return None  # retrying may help: the permanent-failure detector's to judge
        output = counters.outcome_key
        calls = state.calls
        entry = calls.get(call)
        waits = state.waits
        if entry is None or entry[0] != output or entry[2] != state.epoch:
            if not failed and (entry is None or entry[0] != output):
                # a new or changed answer (a failure is never news of progress)
                state.epoch = (state.epoch + 1) & _EPOCH_MASK
            if entry is None:
                calls.insert(call, output, 0, state.epoch, waits)
            else:
                calls.update(call, output, 0, state.epoch, waits)
            return None
        repeats = min(entry[1] + 1, FingerprintTable.MAX_COUNT)
        calls.update(call, output, repeats, state.epoch, waits)
        waited = entry[3] != waits  # the run waited since this call's previous answer
        threshold = self.patience if waited else self.threshold
        if repeats < threshold:
            return None
        tool = event.tool_name or "a tool"
        evidence: dict[str, Any] = {
            "tool": event.tool_name,
            "repeats": repeats,
            "threshold": threshold,
            "output_signature": event.signature,
        }
        if waited:
            evidence["waited"] = True
        if failed:
            evidence["failed"] = True
        if self.config.capture_content:
            evidence["output"] = (
                _error_text(event.error)
                if event.error is not None
                else describe_output(event.output, self.config.signature_max_chars)
            )
        what = "failed the same way" if failed else "returned the same result"
        return Signal(
            detector=self.name,
            kind=self.name,
            score=growing_score(repeats, threshold, 0.6),
            message=f"{tool} {what} {repeats + 1} times for the same call",
            evidence=evidence,
        )

    def _retryable(self, event: Event) -> bool:
        """A failure that retrying may cure (timeout, 429, 5xx), by the permanent-failure
        detector's classification (an ``isError`` result's text is its message)."""
        error = event.error
        if error is None:
            error = error_of_result(event, self.config.signature_max_chars)[0]
        return classify_error(error) == "retryable"

    def export_state(self, state: NoProgressState) -> dict[str, Any]:
        return {
            "calls": state.calls.to_json(),
            "epoch": state.epoch,
            "waits": state.waits,
        }

    def restore_state(self, data: dict[str, Any]) -> NoProgressState:
        state = NoProgressState(self.cap)
        state.waits = int(data.get("waits") or 0) & _EPOCH_MASK
        state.calls.load_json(data.get("calls"), fill=state.waits)  # older: no waits mark
        state.epoch = int(data.get("epoch") or 0) & _EPOCH_MASK
        return state


def _error_text(error: ErrorInfo) -> str:
    """An error as evidence text (only with content capture on)."""
    return ":".join(str(part) for part in (error.type, error.status_code, error.message) if part)
