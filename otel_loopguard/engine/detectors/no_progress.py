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

Waiting is bounded where it cannot help (issue 28, family 2):

* an unchanged *error* answer (a failure, a non-zero exit code, an error text at a line's
  start: ``Error:``, ``Traceback``, ``fatal:``, ``exit code 1``) gets ``error_poll_patience``
  (2) instead: sleeping between two identical failing calls does not cure them;
* an unchanged re-read of the same file or resource (a read-only tool or read-only shell
  command) gets no patience from time gaps alone (``read_time_gap_patience``): a file
  re-read minutes apart is the same file; an explicit wait (``sleep 30`` then ``tail
  build.log``) still counts;
* waits with nothing else done (a wait tool whose arguments are only a duration, or a
  shell ``sleep N``, call after call with no other call between) answered the same way each
  time are a loop of their own: ``idle_wait_threshold`` (3) of them signal kind
  ``idle_wait`` (the default policy replans: "nothing is pending"), twice as many kind
  ``idle_wait_persistent`` (stop).

A new user message (:mod:`~otel_loopguard.engine.detectors.user_turns`) is new
information for a call that succeeded: the customer who changes something makes the agent
search the same flights again, and the same answer to that asked-for repeat is no repeat.
Not for an error answer: the same failing call with the same error after each user message
still counts (issue 28, family 8).

A failure is an outcome too: when the instrumentation records a failed call as a span
error (status ERROR, ``error.type``, an ``exception`` event) there is no result, and the
error (type, status and masked message) is what the call returned. The same call failing
with the same message, with nothing new in between, is no progress whatever the error
class; only failures classified *retryable* (timeouts, 429, 5xx: retrying may help) are
left to the permanent-failure detector, which pauses first and stops later. Distinct calls
failing, or the same call failing differently, are not repeats.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Signal
from otel_loopguard.engine.detectors.base import RunCounters, mypyc_attr
from otel_loopguard.engine.detectors.call_tracking import growing_score
from otel_loopguard.engine.detectors.fingerprint_table import FingerprintTable
from otel_loopguard.engine.detectors.note_tools import note_tools
from otel_loopguard.engine.detectors.permanent_failure import classify_error, error_of_result
from otel_loopguard.engine.detectors.read_only_commands import (
    command_text,
    is_editor_view,
    is_read_only_command,
)
from otel_loopguard.engine.detectors.tool_names import ToolNameMatcher
from otel_loopguard.engine.detectors.user_turns import new_user_turn
from otel_loopguard.engine.detectors.waiting import WAIT_SECONDS, WaitRule
from otel_loopguard.engine.events import ErrorInfo, Event, EventKind
from otel_loopguard.engine.signatures import describe_output

_NO_OUTPUT = 0  # a call seen, not answered yet
_EPOCH_MASK = 0xFFFFFFFF  # epochs are only compared for equality: wrapping is harmless
# the waits mark: time gaps in the low 12 bits, explicit waits (a wait tool, a sleeping
# command) in the next 12, new user messages in the top 8 (each part only compared for
# equality: wrapping is harmless)
_GAP_MASK = 0xFFF
_SLEEP_STEP = 0x1000
_SLEEP_MASK = 0xFFF000
_TURN_STEP = 0x1000000
_TURN_MASK = 0xFF000000
_WAIT_MASK = _GAP_MASK | _SLEEP_MASK
#: kinds of the signal for waits with nothing else done (policy: replan, then stop)
IDLE_WAIT = "idle_wait"
IDLE_WAIT_PERSISTENT = "idle_wait_persistent"
IDLE_WAIT_RECOMMENDATION = (
    "You have been waiting again and again while nothing you wait for is pending and "
    "nothing changed. Stop waiting: check the status of what you expect, start the work "
    "it needs, or finish with what you have."
)
_ERROR_SCAN_CHARS = 2048  # an answer is read for error markers at its head and tail only
_ERROR_TEXT = re.compile(
    r"(?im)^\s*(?:error\b|fatal\b|traceback \(most recent call last\)|exception\b|"
    r"[\w.]*(?:error|exception):\s)|\bexit (?:code|status)[:=]?\s*-?[1-9]|"
    r"\breturn ?code[:=]?\s*-?[1-9]"
)
_EXIT_KEYS = ("exit_code", "exitCode", "returncode", "return_code", "exit_status")
_DURATION = re.compile(r"(?i)^\s*\d+(?:\.\d+)?\s*(?:ms|s|sec|secs|seconds?|m|min|minutes?|h)?\s*$")
#: argument names of a duration (a wait given only these waits for nothing in particular)
_DURATION_KEYS = frozenset(
    {
        "seconds",
        "second",
        "secs",
        "sec",
        "s",
        "ms",
        "milliseconds",
        "minutes",
        "minute",
        "mins",
        "min",
        "hours",
        "duration",
        "time",
        "timeout",
        "delay",
        "interval",
        "wait",
        "sleep",
        "amount",
        "n",
        "t",
    }
)
_DURATION_ENDS = ("_seconds", "_secs", "_ms", "_minutes", "_duration")
_PURE_SLEEP = re.compile(
    r"(?i)^\s*(?:sleep\s+\d+(?:\.\d+)?[smh]?|start-sleep\s+(?:-s(?:econds)?\s+)?\d+)\s*;?\s*$"
)


# Enum members as module constants for the per-event comparisons (see call_tracking).
_TOOL_CALL = EventKind.TOOL_CALL
_TOOL_RESULT = EventKind.TOOL_RESULT
_TOOL_ERROR = EventKind.TOOL_ERROR
_LLM_RESPONSE = EventKind.LLM_RESPONSE


class NoProgressState:
    __slots__ = (
        "calls",
        "epoch",
        "idle_call",
        "idle_output",
        "idle_waits",
        "last_time",
        "user",
        "waits",
    )

    def __init__(self, history_size: int) -> None:
        # call fingerprint -> (output fingerprint, unchanged repeats, epoch of the last
        # answer, waits seen at the last answer)
        self.calls = FingerprintTable(history_size, "IHII")
        self.epoch = 0
        self.waits = 0  # moves at every wait (a wait call, a sleeping command, idle time)
        self.last_time = 0.0  # counters.now at the last tool event (0: none yet)
        # waits with nothing else done: the pure wait in flight, the answer of the last
        # one and how many in a row answered it
        self.idle_call = 0
        self.idle_output = 0
        self.idle_waits = 0
        self.user = 0  # hash of the last user message seen (0: none)


@mypyc_attr(allow_interpreted_subclasses=True)
class NoProgressDetector:
    """Identical calls answered with identical outputs, with nothing new in between."""

    name: ClassVar[str] = "no_progress"
    # the monitor calls us for these only (it pairs results with their calls itself)
    event_kinds: ClassVar[frozenset[EventKind]] = frozenset(
        {EventKind.TOOL_CALL, EventKind.TOOL_RESULT, EventKind.TOOL_ERROR, EventKind.LLM_RESPONSE}
    )

    def __init__(self, config: LoopGuardConfig) -> None:
        self.config = config
        self.threshold = config.no_progress_threshold
        self.patience = max(config.poll_patience, self.threshold)
        self.cap = config.history_size
        self._wait = WaitRule(config)
        self._note = note_tools(config)
        self.error_patience = max(self.threshold, min(config.error_poll_patience, self.patience))
        self.read_gaps = config.read_time_gap_patience
        self.idle_threshold = config.idle_wait_threshold
        self._read_only = ToolNameMatcher(config.read_only_tools)
        self._shell = ToolNameMatcher(config.shell_tools)

    def new_state(self) -> NoProgressState:
        return NoProgressState(self.cap)

    def observe(self, event: Event, state: NoProgressState, counters: RunCounters) -> Signal | None:
        kind = event.kind
        now = counters.now
        if kind is _TOOL_CALL:
            last, state.last_time = state.last_time, now
            name = event.tool_name
            if self._wait.call_waits(name, event.arguments):
                state.waits = _bump(state.waits, _SLEEP_STEP, _SLEEP_MASK)
                if self.idle_threshold and self._pure_wait(name, event.arguments):
                    state.idle_call = counters.call_key
                else:
                    state.idle_call = state.idle_waits = 0
            else:
                if last and now - last >= WAIT_SECONDS:
                    state.waits = _bump(state.waits, 1, _GAP_MASK)
                if state.idle_waits and not self._note[name]:
                    state.idle_waits = state.idle_call = 0  # other work between the waits
            if self._note[name]:
                return None  # a thought written down is not new work
            call = counters.call_key
            if state.calls.get(call) is None:  # a first-time call is new work
                state.epoch = (state.epoch + 1) & _EPOCH_MASK
                state.calls.insert(call, _NO_OUTPUT, 0, 0, state.waits)
            return None
        call = counters.call_key
        if not call or self._note[event.tool_name]:
            if kind is _LLM_RESPONSE:  # (no call key: only model turns come here besides)
                new, state.user = new_user_turn(event, state.user)
                if new:
                    state.waits = _bump(state.waits, _TURN_STEP, _TURN_MASK)
                return None
            state.last_time = now
            return None  # a note tool's answer is no news of progress either
        state.last_time = now
        if state.idle_call and call == state.idle_call:
            idle = self._idle_wait(event, state, counters)
            if idle is not None:
                return idle
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
        if (
            (entry[3] ^ waits) & _TURN_MASK and not failed and not _answer_is_error(event.output)
        ):  # a user message since: the same answer to a repeat the user asked for
            calls.update(call, output, 0, state.epoch, waits)
            return None
        repeats = min(entry[1] + 1, FingerprintTable.MAX_COUNT)
        calls.update(call, output, repeats, state.epoch, waits)
        # the run waited since this call's previous answer
        waited = bool((entry[3] ^ waits) & _WAIT_MASK)
        threshold = self.threshold
        if waited:
            threshold = self._waited_threshold(event, failed, entry[3], waits)
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

    def _waited_threshold(self, event: Event, failed: bool, before: int, waits: int) -> int:
        """The patience of a repeat after waiting (rare: only an unchanged answer after a
        wait gets here): bounded for an error answer and for a re-read after time alone."""
        if failed or _answer_is_error(event.output):
            return self.error_patience
        if (
            not self.read_gaps
            and not (before ^ waits) & _SLEEP_MASK  # time passed, nothing waited explicitly
            and self._reads_only(event.tool_name, event.arguments)
        ):
            return self.threshold
        return self.patience

    def _reads_only(self, name: str | None, arguments: Any) -> bool:
        """A read-only tool, a shell tool running a read-only command, an editor's view."""
        if self._read_only[name]:
            return True
        if arguments is None:
            return False
        if self._shell[name]:
            return is_read_only_command(command_text(arguments))
        return is_editor_view(name, arguments)

    def _pure_wait(self, name: str | None, arguments: Any) -> bool:
        """A wait and nothing else: a wait tool given at most a duration, or a shell
        command that only sleeps (``wait_for_run(run_id=…)`` waits *for* something)."""
        if self._wait.tool_waits(name):
            if arguments is None or isinstance(arguments, (int, float)):
                return True
            if isinstance(arguments, str):
                return _DURATION.match(arguments[:64]) is not None or not arguments.strip()
            if isinstance(arguments, Mapping):
                return len(arguments) <= 2 and all(
                    isinstance(key, str)
                    and (key.lower() in _DURATION_KEYS or key.lower().endswith(_DURATION_ENDS))
                    and (
                        isinstance(value, (int, float))
                        or (isinstance(value, str) and _DURATION.match(value[:64]) is not None)
                    )
                    for key, value in arguments.items()
                )
            return False
        command = command_text(arguments)
        return command is not None and _PURE_SLEEP.match(command[:200]) is not None

    def _idle_wait(
        self, event: Event, state: NoProgressState, counters: RunCounters
    ) -> Signal | None:
        """A pure wait answered: count it when it answered as the previous one did."""
        state.idle_call = 0
        output = counters.outcome_key
        if state.idle_waits and output == state.idle_output:
            state.idle_waits = min(state.idle_waits + 1, FingerprintTable.MAX_COUNT)
        else:
            state.idle_output, state.idle_waits = output, 1
        count, threshold = state.idle_waits, self.idle_threshold
        if count < threshold:
            return None
        persistent = count >= 2 * threshold
        tool = event.tool_name or "a wait tool"
        return Signal(
            detector=self.name,
            kind=IDLE_WAIT_PERSISTENT if persistent else IDLE_WAIT,
            score=growing_score(count, threshold, 0.5),
            message=f"{tool} waited {count} times in a row with nothing pending and nothing "
            "changed",
            evidence={
                "tool": event.tool_name,
                "waits": count,
                "threshold": 2 * threshold if persistent else threshold,
                "output_signature": event.signature,
            },
            recommendation=None if persistent else IDLE_WAIT_RECOMMENDATION,
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
            "idle": [state.idle_call, state.idle_output, state.idle_waits],
            "user": state.user,
        }

    def restore_state(self, data: dict[str, Any]) -> NoProgressState:
        state = NoProgressState(self.cap)
        state.waits = int(data.get("waits") or 0) & _EPOCH_MASK
        state.calls.load_json(data.get("calls"), fill=state.waits)  # older: no waits mark
        state.epoch = int(data.get("epoch") or 0) & _EPOCH_MASK
        user = data.get("user")
        state.user = user if isinstance(user, int) else 0
        idle = data.get("idle")
        if isinstance(idle, list) and len(idle) == 3 and all(isinstance(v, int) for v in idle):
            state.idle_call, state.idle_output = idle[0], idle[1]
            state.idle_waits = min(max(idle[2], 0), FingerprintTable.MAX_COUNT)
        return state


def _bump(marks: int, step: int, mask: int) -> int:
    """``marks`` with the part under ``mask`` moved by ``step`` (wrapping within it)."""
    return (marks & ~mask & _EPOCH_MASK) | ((marks + step) & mask)


def _answer_is_error(output: Any) -> bool:
    """A successful call whose answer says it failed: a non-zero exit code, an ``error``
    entry, or an error marker at a line's start in the head or tail of its text. Called
    only for an unchanged answer after a wait."""
    if isinstance(output, Mapping):
        for key in _EXIT_KEYS:
            code = output.get(key)
            if isinstance(code, int) and not isinstance(code, bool) and code != 0:
                return True
        if output.get("isError") is True or output.get("is_error") is True:
            return True
        if output.get("error"):
            return True
        text = output.get("stderr") or output.get("output") or output.get("stdout")
    else:
        text = output
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text[:_ERROR_SCAN_CHARS]).decode("utf-8", errors="replace")
    if not isinstance(text, str) or not text:
        return False
    if len(text) > 2 * _ERROR_SCAN_CHARS:
        text = text[:_ERROR_SCAN_CHARS] + "\n" + text[-_ERROR_SCAN_CHARS:]
    return _ERROR_TEXT.search(text) is not None


def _error_text(error: ErrorInfo) -> str:
    """An error as evidence text (only with content capture on)."""
    return ":".join(str(part) for part in (error.type, error.status_code, error.message) if part)
