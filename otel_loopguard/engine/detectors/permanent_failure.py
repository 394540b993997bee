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
0. (before all) a usage or quota limit that cannot clear within the run is ``permanent``,
   whatever its status (429 included): see :func:`quota_limited`;
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

Usage and quota limits (``OTEL_LOOPGUARD_QUOTA_RESET_HORIZON``, 900 s; 0 = off). A 429 is
retryable when waiting clears it ("try again in 2s", ``Retry-After: 1``), not when the
limit resets beyond the run or no wait clears it: "weekly usage limit reached, resets
Monday", "rate limit ... try again in 3 days", ``Retry-After: 86400``, "You exceeded your
current quota", ``insufficient_quota``, billing, "credit balance is too low", 402. Such a
failure is ``permanent`` (evidence ``limit: quota``) and is counted per tool whatever the
arguments (a rewording cannot get round an account's limit) and whatever the reset time
it names; failed model calls (``llm_response`` events with an error) count the same way
per model, only for this kind of failure (a model call that fails otherwise is the
provider's to retry), and a successful answer of that model clears it. Waiting between
attempts is no progress: a wait tool's result (``sleep``, ``wait_*``, ``WAIT_TOOLS``), like
a note tool's, leaves the progress mark where it was, so a backoff does not restart the
count. The second attempt stops (``PERMANENT_FAILURE_THRESHOLD``); other work in between
(a shell ``sleep 60``, whose arguments this detector does not see, or real work) does not
clear the limit either: the count goes on, and the attempt after that work stops one
attempt later (the third at the latest).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar, Literal

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Signal
from otel_loopguard.engine.detectors.base import RunCounters, mypyc_attr
from otel_loopguard.engine.detectors.call_tracking import growing_score
from otel_loopguard.engine.detectors.fingerprint_table import FingerprintTable, fingerprint
from otel_loopguard.engine.detectors.note_tools import note_tools
from otel_loopguard.engine.detectors.waiting import WaitRule
from otel_loopguard.engine.events import ErrorInfo, Event, EventKind
from otel_loopguard.engine.signatures import describe_output, output_exact_signature

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


#: the default of ``OTEL_LOOPGUARD_QUOTA_RESET_HORIZON`` (seconds)
QUOTA_RESET_HORIZON = 900.0
_FAR = float("inf")
#: a limit no wait clears: the account has to change (pay, raise the plan)
_ACCOUNT_LIMIT = re.compile(
    r"(?i)insufficient[_ ]quota|exceeded your (?:current )?quota|quota (?:has been )?exhausted"
    r"|out of (?:credits?|quota)|credit balance is too low|insufficient (?:credits?|balance"
    r"|funds)|check your (?:plan and )?billing|billing (?:details|hard limit|account is"
    r"|is not active|not active)|payment required|spending limit (?:reached|exceeded)"
)
#: a limit at all: only then does a stated wait say how far off the limit's reset is
_LIMIT_WORDS = re.compile(
    r"(?i)rate[ _-]?limit|too many requests|quota|usage|limit|throttl|resource[ _]?exhausted"
)
#: a limit over a long period: it clears, but not soon (unless a short wait is stated)
_PERIOD_LIMIT = re.compile(
    r"(?i)(?:daily|weekly|monthly|per[- ]day|per[- ]week|per[- ]month|\d+[- ]hour) (?:usage |token"
    r" |request |rate |message )?(?:limit|quota|cap)|usage (?:limit|cap|quota)"
    r"(?: has been| was)? (?:reached|exceeded|hit)|(?:reached|hit|exceeded) (?:your |the )?"
    r"usage (?:limit|cap)|limit reached\W+resets"
)
#: where an error says how long to wait: the words before the duration
_WAIT_LEAD = re.compile(
    r"(?i)\b(?:try(?:ing)? again|retry(?:[-_ ]after)?|retry_delay|retrydelay|resets?|reset_after"
    r"|available again|wait)\b[\"':=\s]{0,4}(?:(?:in|after|at|on)\b[\s:]{0,3})?"
)
_DURATION_PART = re.compile(
    r"(\d+(?:\.\d+)?)\s*(milliseconds?|millis|msecs?|months?|mo|minutes?|mins?|ms|m|seconds?"
    r"|secs?|s|hours?|hrs?|h|days?|d|weeks?|w)(?![a-z])[\s,]*(?:and\s+)?",
    re.I,
)
_BARE_SECONDS = re.compile(r"(\d+(?:\.\d+)?)(?![\d.:/-])")
#: a named reset time: a weekday, tomorrow, next week, a date, a clock time
_NAMED_RESET = re.compile(
    r"(?i)(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tue|wed|thu|fri"
    r"|sat|sun|tomorrow|next (?:week|month|day|billing)|the (?:first|1st|start|beginning)"
    r"|\d{4}-\d\d-\d\d|\d{1,2}(?::\d\d)?\s*(?:am|pm)\b|\d{1,2}:\d\d)"
)
_UNIT_SECONDS = {
    "ms": 0.001,
    "mi": 0.001,  # millis, milliseconds
    "mo": 2_592_000.0,
    "m": 60.0,
    "s": 1.0,
    "h": 3600.0,
    "d": 86400.0,
    "w": 604_800.0,
}


def _unit_seconds(unit: str) -> float:
    unit = unit.lower()
    if unit.startswith("mil") or unit.startswith("ms") or unit.startswith("msec"):
        return 0.001
    if unit.startswith("mo"):
        return _UNIT_SECONDS["mo"]
    return _UNIT_SECONDS.get(unit[0], 1.0)


def stated_wait(message: str) -> float | None:
    """Seconds an error says to wait before trying again (``inf`` for a named reset such
    as "resets Monday"), ``None`` when it says nothing of the kind. The first statement
    counts."""
    for lead in _WAIT_LEAD.finditer(message):
        at = lead.end()
        total = 0.0
        found = False
        while True:
            part = _DURATION_PART.match(message, at)
            if part is None:
                break
            total += float(part.group(1)) * _unit_seconds(part.group(2))
            found = True
            at = part.end()
        if found:
            return total
        rest = message[at : at + 40]
        if _NAMED_RESET.match(rest):
            return _FAR
        bare = _BARE_SECONDS.match(rest)
        if bare is not None:  # ``Retry-After: 120``: seconds
            return float(bare.group(1))
    return None


#: recent errors' answers (quota_limited's and classify_error's). A looping agent meets the
#: same error again and again, two detectors classify each failure, and the regexes cost
#: tens of thousands of instructions a message: the answer is kept, keyed by exactly what
#: the classification reads. Cleared when full: bounded, O(1) per failure.
_CLASSIFIED_CAP = 256
_classified: dict[tuple[Any, ...], Any] = {}


def _remembered(work: Callable[[ErrorInfo, float], Any], error: ErrorInfo, horizon: float) -> Any:
    """``work(error, horizon)``, answered from :data:`_classified` when this error was
    classified before: keyed by ``work``, the type, the status, the capped message and the
    horizon. A value of an unexpected type, or a long type, is worked out every time."""
    error_type, status, message = error.type, error.status_code, error.message
    if (
        (error_type is not None and (type(error_type) is not str or len(error_type) > 200))
        or (status is not None and type(status) is not int)
        or (message is not None and type(message) is not str)
    ):
        return work(error, horizon)
    key = (work, error_type, status, (message or "")[:_MESSAGE_CAP], horizon)
    known = _classified.get(key)
    if known is None:
        known = work(error, horizon)
        if len(_classified) >= _CLASSIFIED_CAP:
            _classified.clear()
        _classified[key] = known
    return known


def quota_limited(error: ErrorInfo, horizon: float = QUOTA_RESET_HORIZON) -> bool:
    """A usage or quota limit that cannot clear within the run (see the module doc):
    a stated wait beyond ``horizon`` seconds, a limit no wait clears (quota, billing,
    credits, 402), or a long-period limit with no short wait stated. ``horizon`` 0: never.
    """
    if horizon <= 0:
        return False
    return bool(_remembered(_quota_limited, error, horizon))


def _quota_limited(error: ErrorInfo, horizon: float) -> bool:
    """:func:`quota_limited`, worked out."""
    message = (error.message or "")[:_MESSAGE_CAP]
    text = f"{error.type or ''} {message}" if error.type else message
    if error.status_code == 402 or _ACCOUNT_LIMIT.search(text):
        return True
    if error.status_code != 429 and _LIMIT_WORDS.search(text) is None:
        return False  # a wait stated by a timeout or a job is no limit's reset
    wait = stated_wait(message)
    if wait is not None:
        return wait > horizon
    return _PERIOD_LIMIT.search(text) is not None


def classify_error(error: ErrorInfo, quota_horizon: float = QUOTA_RESET_HORIZON) -> ErrorClass:
    """``permanent`` when the status or the message says retrying the same call cannot
    help (a usage limit beyond ``quota_horizon`` seconds included), ``retryable`` when
    status, message or type say it may, else ``unclassified``."""
    return _remembered(_classify_error, error, quota_horizon)  # type: ignore[no-any-return]


def _classify_error(error: ErrorInfo, quota_horizon: float) -> ErrorClass:
    """:func:`classify_error`, worked out."""
    message = (error.message or "")[:_MESSAGE_CAP]
    if quota_horizon > 0 and quota_limited(error, quota_horizon):
        return "permanent"
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
    return error, output_exact_signature(text, max_chars)


# Enum members as module constants for the per-event comparisons (see call_tracking).
_TOOL_ERROR = EventKind.TOOL_ERROR
_TOOL_RESULT = EventKind.TOOL_RESULT
_LLM_RESPONSE = EventKind.LLM_RESPONSE


_FILTER_BITS = 1024  # bits of the "maybe failing" filter: ~6 % false positives at 64 keys
_TOOL_KEYS_CAP = 1024  # tool names whose "tool:<name>" fingerprint is kept


_PROGRESS_MASK = 0xFFFFFFFF  # progress marks are only compared for equality
#: the error fingerprint of every usage-limit failure: its reset time may be worded anew
#: each attempt ("resets in 2d 3h" then "2d 2h"), it is the same limit
_QUOTA_ERROR = fingerprint("error:usage limit")
_MEMO_LIMIT = 1024


class _NotWork(dict):  # type: ignore[type-arg]
    """``not_work[name]``: a note tool (records a thought) or a wait tool (sleeps): its
    success is no distinct work, so it does not restart a failure's count. Memoised
    like :class:`~otel_loopguard.engine.detectors.tool_names.ToolNameMatcher`."""

    __slots__ = ("_note", "_wait")

    def __init__(self, config: LoopGuardConfig) -> None:
        super().__init__()
        self._note = note_tools(config)
        self._wait = WaitRule(config)

    def __missing__(self, name: object) -> bool:
        found = False
        if isinstance(name, str) and name:
            found = bool(self._note[name]) or self._wait.tool_waits(name)
        if len(self) >= _MEMO_LIMIT:
            self.clear()
        self[name] = found
        return found


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
        {EventKind.TOOL_RESULT, EventKind.TOOL_ERROR, EventKind.LLM_RESPONSE}
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
        self._not_work = _NotWork(config)
        self._horizon = config.quota_reset_horizon

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
                if step != state.last_success and not self._not_work[event.tool_name]:
                    # distinct successful work (a thought written down, a wait, is none)
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
        elif kind is _LLM_RESPONSE:
            return self._model_call(event, state)
        else:
            return None
        return self._failure(event, error, error_signature, counters.call_key, state)

    def _model_call(self, event: Event, state: PermanentFailureState) -> Signal | None:
        """A model call: only a usage-limit failure counts (per model); an answer of
        that model clears it."""
        error = event.error
        if error is None:
            maybe = state.maybe
            if maybe:
                key = self._tool_key(f"model:{event.model}")
                if maybe >> (key % _FILTER_BITS) & 1 and state.failures.pop(key):
                    state.maybe = _filter_of(state.failures)
            return None
        if not self._horizon or not quota_limited(error, self._horizon):
            return None
        key = self._tool_key(f"model:{event.model}")
        return self._failure(event, error, "usage limit", key, state, model=True)

    def _failure(
        self,
        event: Event,
        error: ErrorInfo,
        error_signature: str,
        call: int,
        state: PermanentFailureState,
        model: bool = False,
    ) -> Signal | None:
        quota = model or (self._horizon > 0 and quota_limited(error, self._horizon))
        error_class: ErrorClass = "permanent" if quota else classify_error(error, 0.0)
        if model:
            key = call  # the model's key
        elif quota or not call or _TOOL_LEVEL.search((error.message or "")[:_MESSAGE_CAP]):
            # a usage limit is the account's: any arguments of the tool hit it
            key = self._tool_key(event.tool_name)
        else:
            key = call
        error_key = _QUOTA_ERROR if quota else fingerprint(error_signature)
        failures = state.failures
        progress = state.progress
        entry = failures.get(key)
        worked = False  # distinct successful work since this limit's previous attempt
        if entry is None:
            count = 1
            failures.insert(key, error_key, count, progress)
            state.maybe |= 1 << (key % _FILTER_BITS)
        else:
            # the same error with no distinct successful work since: one more; else anew
            same = entry[0] == error_key and entry[2] == progress
            worked = quota and entry[0] == error_key and entry[2] != progress
            # a usage limit is not cleared by other work (only a success of its own tool
            # or model clears it): it counts on, one attempt later
            count = min(entry[1] + 1, FingerprintTable.MAX_COUNT) if same or worked else 1
            failures.update(key, error_key, count, progress)
        signal_kind: str = error_class
        if quota:
            threshold, base = self.permanent_threshold + (1 if worked else 0), 0.8
            what = "usage limit, which does not reset within the run"
        elif error_class == "permanent":
            threshold, base, what = self.permanent_threshold, 0.8, "permanent error"
        elif count >= self.persistent_threshold:
            threshold, base, what = self.persistent_threshold, 0.8, "error"
            signal_kind = "persistent"
        else:
            threshold, base = self.retryable_threshold, 0.35
            what = "retryable error" if error_class == "retryable" else "error"
        if count < threshold:
            return None
        tool = f"model {event.model or '?'}" if model else (event.tool_name or "a tool")
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
        if quota:
            evidence["limit"] = "quota"
        if model:
            evidence["model"] = event.model
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
