"""Permanent failure: the same call failing the same way again.

Retrying a 404, a permission error or a call to a tool that does not exist cannot succeed;
retrying a timeout or a 429 may. :func:`classify_error` tells them apart from what every
entry point can see (status code, message, exception type), in this order:

1. the status code (``ErrorInfo.status_code``, else one in the message such as
   ``HTTP 404`` / ``status=503`` / ``Error code: 429``): 400/401/403/404/405/410/422 are
   permanent; 408/425/429/500/502/503/504 retryable;
2. retryable wording (timeout, rate limit, connection reset/refused, temporarily
   unavailable, overloaded, try again);
3. permanent wording (not found, no such, permission denied, forbidden, unauthorized,
   invalid argument, unknown tool, validation error, missing required, unexpected keyword);
4. a retryable exception type (``TimeoutError``/``ConnectionError``/``RateLimitError``...);
5. anything else is ``unclassified``. A type name alone never makes a failure permanent:
   instrumentations record failed spans with ``error.type`` set to whatever the tool raised
   (``ValueError``, ``EditValidationError``), and a permanent-sounding name stopped runs
   whose distinct edits each failed once or twice. :data:`PERMANENT_TYPES` is kept as
   documentation of what is *not* trusted.

Failures are counted per call signature (the same call failing with the same error: type,
status and masked message, which is the call's outcome); an error that is about the tool
itself (unknown tool, no such tool) is counted per tool, whatever the arguments. A
different error restarts the count, and so does progress in between: a success of the
same call (retry-then-success), or distinct successful work (a success whose call and
answer differ from the previous success's: a token refresh followed by other calls, a
different edit that applied). Repeating one successful step in between (A fails, B
succeeds with the same answer, A fails, ...) is not progress. So a 401, a refresh, fifty
successful calls and a 401 again is one failure, twice; not "failed twice".

Kinds: ``permanent`` fires at ``permanent_failure_threshold`` (2) with a high score (the
default policy stops); ``retryable`` and ``unclassified`` at ``retryable_failure_threshold``
(4) with a weak one (the policy pauses: back off); ``persistent`` when a retryable or
unclassified failure of the same call keeps coming, at twice that threshold (8): retrying
the same call with the same answer that often is a loop whatever the error class (the
policy stops). MCP results flagged ``isError`` count as errors.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Signal
from otel_loopguard.engine.detectors.base import RunCounters, mypyc_attr
from otel_loopguard.engine.detectors.call_tracking import growing_score
from otel_loopguard.engine.detectors.fingerprint_table import FingerprintTable, fingerprint
from otel_loopguard.engine.detectors.note_tools import note_tools
from otel_loopguard.engine.events import ErrorInfo, Event, EventKind
from otel_loopguard.engine.signatures import describe_output, output_signature

ErrorClass = Literal["permanent", "retryable", "unclassified"]

PERMANENT_STATUS = frozenset({400, 401, 403, 404, 405, 410, 422})
RETRYABLE_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
_MESSAGE_CAP = 500  # characters of an error message looked at
FAILING_CALLS_CAP = 64  # distinct still-failing calls remembered per run

_STATUS_IN_MESSAGE = re.compile(
    r"(?i)(?:\bstatus(?:[ _]?code)?|\bhttp(?:/\d(?:\.\d)?)?|\berror[ _]?code|\bcode)"
    r"\W{0,3}([1-5]\d\d)\b|^\s*([45]\d\d)\b"
)
_RETRYABLE_TEXT = re.compile(
    r"(?i)time[ds]?[ _-]?out|timed out|deadline exceeded|rate[ _-]?limit|too many requests"
    r"|throttl|temporar(?:il)?y unavailable|service unavailable|connection (?:reset|refused"
    r"|aborted|closed|error)|econnreset|econnrefused|broken pipe|try again|overloaded"
    r"|bad gateway|gateway time|internal server error|server error|unavailable"
)
_PERMANENT_TEXT = re.compile(
    r"(?i)not found|no such|does ?n[o']t exist|not exist|permission denied|forbidden"
    r"|unauthori[sz]ed|access denied|not allowed|invalid (?:argument|parameter|input|request"
    r"|value|params|arguments|json|schema|tool|name|path|url)|unknown (?:tool|function"
    r"|command|parameter|argument|field)|validation (?:error|failed)|failed validation"
    r"|missing (?:required|argument|parameter)|required (?:field|argument|parameter|property)"
    r"|unexpected keyword|is not a valid|not supported|unsupported|bad request|unprocessable"
    r"|malformed|is not defined|not implemented"
)
_RETRYABLE_TYPE = re.compile(
    r"(?i)timeout|connection|ratelimit|rate_limit|unavailable|throttl|temporar|overload"
    r"|retry|transient|internalserver|apierror$"
)
#: exception type names that sound permanent; not trusted alone (see the module docstring)
PERMANENT_TYPES = re.compile(
    r"(?i)notfound|not_found|permission|forbidden|unauthori|authentication|valueerror"
    r"|typeerror|keyerror|attributeerror|lookuperror|indexerror|validation|invalid"
    r"|notimplemented|unknowntool|badrequest|unprocessable"
)
_TOOL_LEVEL = re.compile(
    r"(?i)unknown (?:tool|function)|no such (?:tool|function)|tool .{0,80}?not (?:found|exist)"
    r"|(?:function|tool) not found|not a valid tool|invalid tool"
)


def classify_error(error: ErrorInfo) -> ErrorClass:
    """``permanent`` when the status or the message says retrying the same call cannot
    help, ``retryable`` when status, message or type say it may, else ``unclassified``."""
    message = (error.message or "")[:_MESSAGE_CAP]
    status = error.status_code
    if status is None:
        found = _STATUS_IN_MESSAGE.search(message)
        if found:
            status = int(found.group(1) or found.group(2))
    if status in PERMANENT_STATUS:
        return "permanent"
    if status in RETRYABLE_STATUS:
        return "retryable"
    if _RETRYABLE_TEXT.search(message):
        return "retryable"
    if _PERMANENT_TEXT.search(message):
        return "permanent"
    error_type = (error.type or "")[:_MESSAGE_CAP]
    if _RETRYABLE_TYPE.search(error_type):
        return "retryable"
    return "unclassified"


def error_of_result(event: Event, max_chars: int) -> tuple[ErrorInfo, str]:
    """An MCP-style ``isError`` result as an error (its text is the message), and the
    signature of that error."""
    if event.error is not None:
        error = event.error
    else:
        error = ErrorInfo(type="ToolError", message=describe_output(event.output, max_chars))
    text = f"{error.type or ''}:{error.status_code or ''}:{error.message or ''}"
    return error, output_signature(text, max_chars)[0]


# Enum members as module constants for the per-event comparisons (see call_tracking).
_TOOL_ERROR = EventKind.TOOL_ERROR
_TOOL_RESULT = EventKind.TOOL_RESULT


_FILTER_BITS = 1024  # bits of the "maybe failing" filter: ~6 % false positives at 64 keys
_TOOL_KEYS_CAP = 1024  # tool names whose "tool:<name>" fingerprint is kept


_PROGRESS_MASK = 0xFFFFFFFF  # progress marks are only compared for equality


class PermanentFailureState:
    __slots__ = ("failures", "last_success", "maybe", "progress")

    def __init__(self, history_size: int) -> None:
        # fingerprint of the call (or of "tool:<name>") -> (error fingerprint, count,
        # progress mark at its last failure)
        self.failures = FingerprintTable(history_size, "IHI")
        # a one-int Bloom filter of the keys in ``failures``: bit ``key % _FILTER_BITS``.
        # Most results are successes of calls that never failed; the filter answers "not
        # there" for them without a table lookup. Evictions leave bits set (a superset);
        # a removal rebuilds it from the table.
        self.maybe = 0
        # distinct successful work: moves on each success whose call and answer differ
        # from the previous success's (``last_success``: call ^ answer fingerprints)
        self.progress = 0
        self.last_success = 0


def _filter_of(table: FingerprintTable) -> int:
    bits = 0
    for key, _values in table.items():
        bits |= 1 << (key % _FILTER_BITS)
    return bits


@mypyc_attr(allow_interpreted_subclasses=True)
class PermanentFailureDetector:
    """The same call failing with the same error; permanent errors weigh more."""

    name: ClassVar[str] = "permanent_failure"
    # the monitor calls us for these only (it pairs results with their calls itself)
    event_kinds: ClassVar[frozenset[EventKind]] = frozenset(
        {EventKind.TOOL_RESULT, EventKind.TOOL_ERROR}
    )

    def __init__(self, config: LoopGuardConfig) -> None:
        self.config = config
        self.permanent_threshold = config.permanent_failure_threshold
        self.retryable_threshold = config.retryable_failure_threshold
        # a retryable or unclassified failure repeated this often is a loop all the same
        self.persistent_threshold = 2 * config.retryable_failure_threshold
        # only calls still failing take room (a success removes its call)
        self.cap = min(config.history_size, FAILING_CALLS_CAP)
        self._tool_keys: dict[str | None, int] = {}
        self._note = note_tools(config)

    def _tool_key(self, tool: str | None) -> int:
        """The fingerprint of ``tool:<name>``: a failure about the tool, not the call."""
        key = self._tool_keys.get(tool)
        if key is None:
            key = fingerprint(f"tool:{tool}")
            if len(self._tool_keys) >= _TOOL_KEYS_CAP:
                self._tool_keys.clear()  # tool names are few; a flood just starts over
            self._tool_keys[tool] = key
        return key

    def new_state(self) -> PermanentFailureState:
        return PermanentFailureState(self.cap)

    def observe(
        self, event: Event, state: PermanentFailureState, counters: RunCounters
    ) -> Signal | None:
        kind = event.kind
        if kind is _TOOL_RESULT:
            if not counters.failed:
                step = counters.call_key ^ counters.outcome_key
                if step != state.last_success and not self._note[event.tool_name]:
                    # distinct successful work (a thought written down is none)
                    state.last_success = step
                    state.progress = (state.progress + 1) & _PROGRESS_MASK
                maybe = state.maybe
                if maybe:  # a success: that call (and its tool) is fine again
                    call = counters.call_key
                    tool = self._tool_key(event.tool_name)
                    removed = (
                        bool(call)
                        and maybe >> (call % _FILTER_BITS) & 1
                        and (state.failures.pop(call))
                    )
                    if maybe >> (tool % _FILTER_BITS) & 1 and state.failures.pop(tool):
                        removed = True
                    if removed:
                        state.maybe = _filter_of(state.failures)
                return None
            error, error_signature = error_of_result(event, self.config.signature_max_chars)
        elif kind is _TOOL_ERROR:
            error = event.error or ErrorInfo()
            error_signature = event.signature
        else:
            return None
        return self._failure(event, error, error_signature, counters.call_key, state)

    def _failure(
        self,
        event: Event,
        error: ErrorInfo,
        error_signature: str,
        call: int,
        state: PermanentFailureState,
    ) -> Signal | None:
        error_class = classify_error(error)
        if not call or _TOOL_LEVEL.search((error.message or "")[:_MESSAGE_CAP]):
            key = self._tool_key(event.tool_name)
        else:
            key = call
        error_key = fingerprint(error_signature)
        failures = state.failures
        progress = state.progress
        entry = failures.get(key)
        if entry is None:
            count = 1
            failures.insert(key, error_key, count, progress)
            state.maybe |= 1 << (key % _FILTER_BITS)
        else:
            # the same error with no distinct successful work since: one more; else anew
            same = entry[0] == error_key and entry[2] == progress
            count = min(entry[1] + 1, FingerprintTable.MAX_COUNT) if same else 1
            failures.update(key, error_key, count, progress)
        signal_kind: str = error_class
        if error_class == "permanent":
            threshold, base, what = self.permanent_threshold, 0.8, "permanent error"
        elif count >= self.persistent_threshold:
            threshold, base, what = self.persistent_threshold, 0.8, "error"
            signal_kind = "persistent"
        else:
            threshold, base = self.retryable_threshold, 0.35
            what = "retryable error" if error_class == "retryable" else "error"
        if count < threshold:
            return None
        tool = event.tool_name or "a tool"
        detail = ", ".join(str(part) for part in (error.status_code, error.type) if part)
        evidence: dict[str, Any] = {
            "tool": event.tool_name,
            "count": count,
            "threshold": threshold,
            "error_class": error_class,
            "error_type": error.type,
            "status_code": error.status_code,
            "error_signature": error_signature,
        }
        if self.config.capture_content and error.message:
            evidence["error_message"] = error.message[: self.config.signature_max_chars]
        return Signal(
            detector=self.name,
            kind=signal_kind,
            score=growing_score(count, threshold, base),
            message=f"{tool} failed {count} times with the same {what}"
            + (f" ({detail})" if detail else ""),
            evidence=evidence,
        )

    def export_state(self, state: PermanentFailureState) -> dict[str, Any]:
        return {
            "failures": state.failures.to_json(),
            "progress": state.progress,
            "last_success": state.last_success,
        }

    def restore_state(self, data: dict[str, Any]) -> PermanentFailureState:
        state = PermanentFailureState(self.cap)
        state.progress = int(data.get("progress") or 0) & _PROGRESS_MASK
        state.last_success = int(data.get("last_success") or 0)
        # an older export's records lack the progress mark
        state.failures.load_json(data.get("failures"), fill=state.progress)
        state.maybe = _filter_of(state.failures)
        return state
