"""Repetition: the same tool call again within a run.

Counts ``tool_call`` signatures over the whole run (an LRU of ``history_size`` distinct
signatures) and fires from the ``repetition_threshold``-th identical call on, with a score
that grows with the count. Paraphrased repeats (same content words in another order, case,
punctuation, with filler words) are counted on the near-duplicate key and fire as kind
``near_duplicate``. An optional user hook (``OTEL_LOOPGUARD_SIMILARITY``) compares a call's
capped canonical text with the last :data:`SIMILARITY_WINDOW` calls of the same tool (kind
``similar``).

Repetition alone is weak evidence — running the same test command after each edit repeats
it too — so the default policy only warns on it; it stops when no-progress evidence joins.
The evidence carries ``consecutive`` (identical calls in a row) to tell the two apart.

Reworded calls bring their own no-progress evidence. The no-progress detector compares
exact calls, so it sees each paraphrase of a query, or the same shell command with a
display counter in its description (``"description": "noop17"``: left out of the near key,
see :mod:`~otel_loopguard.engine.signatures`), as new work. This detector therefore also
follows the answers of a near-duplicate key once its calls are seen to vary (the key has
more calls than the call's exact signature: a reworded call), by the no-progress rule: a
repeat counts when the answer is unchanged and nothing new happened in between (no
first-time key, no answer unseen among the run's latest :data:`RECENT_OUTPUTS`). At
``no_progress_threshold`` unchanged repeats of a key with ``repetition_threshold`` calls,
the answer fires a ``near_duplicate`` signal whose evidence holds ``unchanged_outputs``,
on which the default policy stops (the third such answer by default, as for exact
repeats: the answer of the key's latest call, when it came right before the first reworded
call, is the one the others are compared with). Paraphrases with different
answers, distinct queries with the same empty answer, and pages behind opaque cursors
(different keys) never get there. Calls whose key does not vary cost nothing more.
"""

from __future__ import annotations

import logging
from array import array
from collections import deque
from typing import Any, ClassVar
from zlib import crc32 as _crc32

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Signal
from otel_loopguard.engine.detectors.base import RunCounters, mypyc_attr
from otel_loopguard.engine.detectors.call_tracking import growing_score, touch
from otel_loopguard.engine.detectors.fingerprint_table import FingerprintTable, fingerprint
from otel_loopguard.engine.events import Event, EventKind
from otel_loopguard.engine.signatures import Similarity, call_text, describe_call, load_similarity

logger = logging.getLogger("otel_loopguard.engine.detectors.repetition")

SIMILARITY_WINDOW = 8  # recent calls per tool a new call is compared with by the hook
SIMILARITY_TOOLS = 32  # tools whose recent call texts are kept for the hook


# Enum members as module constants for the per-event comparisons (see call_tracking).
_TOOL_CALL = EventKind.TOOL_CALL
_TOOL_RESULT = EventKind.TOOL_RESULT
_EPOCH_MASK = 0xFFFFFFFF  # as no_progress: epochs are only compared for equality
RECENT_CALLS = 16  # latest followed calls remembered with their near key, to pair answers
RECENT_OUTPUTS = 32  # latest answers: one not among them is news (the world moved)
ANSWERED_KEYS_CAP = 32  # near keys whose answers are followed


class Following:
    """The answers of near keys whose calls vary: made for a run at its first such call.

    Most runs never reword a call; they carry ``None`` instead of this (per-run memory).
    Fingerprints are kept in ``array("I")`` (4 bytes each, not a 28-byte ``int``).
    """

    __slots__ = ("answers", "calls", "epoch", "nears", "outputs")

    def __init__(self) -> None:
        # followed near key fingerprint -> (answer fingerprint, unchanged repeats, epoch
        # of the last answer)
        self.answers = FingerprintTable(ANSWERED_KEYS_CAP, "IHI")
        # the latest followed calls and their near keys, oldest first (an answer follows
        # its call closely); the latest answers, to tell news from a repeat
        self.calls = array("I")
        self.nears = array("I")
        self.outputs = array("I")
        self.epoch = 0


class RepetitionState:
    __slots__ = (
        "answered_near",
        "answered_output",
        "exact",
        "following",
        "last_call",
        "last_near",
        "last_signature",
        "near",
        "similar_texts",
        "streak",
    )

    def __init__(self, history_size: int) -> None:
        # signature fingerprint -> count, the history_size most recently seen
        self.exact = FingerprintTable(history_size, "H")
        self.near = FingerprintTable(history_size, "H")
        self.last_signature = ""
        self.streak = 0
        # tool -> recent capped call texts; only with a similarity hook configured
        self.similar_texts: dict[str, deque[str]] = {}
        self.following: Following | None = None  # see Following
        # the latest call and its near key, and the near key and answer of the latest call
        # answered right after it was made: the reference a key's first reworded call is
        # compared with, so reworded calls stop as early as exact repeats
        self.last_call = 0
        self.last_near = 0
        self.answered_near = 0
        self.answered_output = 0


@mypyc_attr(allow_interpreted_subclasses=True)
class RepetitionDetector:
    """Same call signature (or near-duplicate key) again within the run."""

    name: ClassVar[str] = "repetition"
    # the monitor calls us for these only
    event_kinds: ClassVar[frozenset[EventKind]] = frozenset(
        {EventKind.TOOL_CALL, EventKind.TOOL_RESULT}
    )

    def __init__(self, config: LoopGuardConfig) -> None:
        self.config = config
        self.threshold = config.repetition_threshold
        self.no_progress_threshold = config.no_progress_threshold
        self.cap = config.history_size
        self.near_enabled = config.near_duplicate
        self.similarity: Similarity | None = load_similarity(config.similarity)
        self.similarity_threshold = config.similarity_threshold

    def new_state(self) -> RepetitionState:
        return RepetitionState(self.cap)

    def observe(self, event: Event, state: RepetitionState, counters: RunCounters) -> Signal | None:
        kind = event.kind
        if kind is _TOOL_RESULT:
            return self._answer(event, state, counters) if self.near_enabled else None
        if kind is not _TOOL_CALL or not event.signature:
            return None
        signature = event.signature
        near_count = near = 0
        count = state.exact.bump(counters.call_key)  # the signature's, from the monitor
        if self.near_enabled and event.near_key:
            # per agent within a run, like call_key (counters.agent_key: 0 for the run's own)
            try:  # fingerprint(), inlined: once per tool span
                near = _crc32(event.near_key.encode()) or 1
            except UnicodeEncodeError:
                near = fingerprint(event.near_key)
            near = (near ^ counters.agent_key) or 1
            near_count = state.near.bump(near)
            following = state.following
            if near_count == 1:  # a first-time key is new work
                if following is not None:
                    following.epoch = (following.epoch + 1) & _EPOCH_MASK
            elif near_count > count and counters.call_key:  # the key's calls vary
                if following is None:
                    following = state.following = Following()
                self._follow(near, counters.call_key, following, state)
        state.last_call, state.last_near = counters.call_key, near
        if signature == state.last_signature:
            state.streak += 1
        else:
            state.last_signature, state.streak = signature, 1
        similar_count = self._similar_count(event, state) if self.similarity else 0

        if count >= self.threshold:
            kind, hits, base, how = "exact", count, 0.6, "identical arguments"
        elif near_count >= self.threshold:
            kind, hits, base, how = "near_duplicate", near_count, 0.5, "near-identical arguments"
        elif similar_count >= self.threshold:
            kind, hits, base, how = "similar", similar_count, 0.45, "similar arguments"
        else:
            return None
        tool = event.tool_name or "a tool"
        evidence: dict[str, Any] = {
            "tool": event.tool_name,
            "count": hits,
            "threshold": self.threshold,
            "consecutive": state.streak,
            "signature": signature,
        }
        if self.config.capture_content:
            evidence["call"] = describe_call(
                event.tool_name or "", event.arguments, self.config.signature_max_chars
            )
        return Signal(
            detector=self.name,
            kind=kind,
            score=growing_score(hits, self.threshold, base),
            message=f"{tool} called {hits} times with {how}",
            evidence=evidence,
        )

    @staticmethod
    def _follow(near: int, call: int, following: Following, state: RepetitionState) -> None:
        """Pair the next answer to ``call`` with its varying near key ``near``.

        A key followed for the first time takes as its reference the answer of the run's
        latest answered call when that call had the same key and nothing came in between
        (its answer was the latest): the first reworded call's answer is then already a
        repeat, as the second identical call's is.
        """
        calls, nears = following.calls, following.nears
        calls.append(call)
        nears.append(near)
        if len(calls) > RECENT_CALLS:
            del calls[0], nears[0]
        if following.answers.get(near) is None:
            reference = state.answered_output if state.answered_near == near else 0
            if reference:
                outputs = following.outputs
                if reference not in outputs:
                    outputs.append(reference)
                    if len(outputs) > RECENT_OUTPUTS:
                        del outputs[0]
            following.answers.insert(near, reference, 0, following.epoch)

    def _answer(self, event: Event, state: RepetitionState, counters: RunCounters) -> Signal | None:
        """An answer: news moves the epoch; a followed key's answer unchanged is a repeat."""
        following = state.following
        output = counters.outcome_key
        if counters.call_key == state.last_call and state.last_call:
            # the latest call's own answer, nothing in between: a reference for its key
            if counters.failed:
                state.answered_near = 0
            else:
                state.answered_near, state.answered_output = state.last_near, output
        else:
            state.answered_near = 0
        if following is None or counters.failed or not output:
            return None  # nothing followed in this run: the usual case
        outputs = following.outputs
        if output not in outputs:  # an answer not seen lately: the world moved
            following.epoch = (following.epoch + 1) & _EPOCH_MASK
            outputs.append(output)
            if len(outputs) > RECENT_OUTPUTS:
                del outputs[0]
        call = counters.call_key
        recent = following.calls
        if not call or call not in recent:
            return None
        at = len(recent) - 1 - recent[::-1].index(call)  # its latest call
        near = following.nears[at]
        answers = following.answers
        entry = answers.get(near)
        if entry is None:
            return None
        last, repeats, epoch = entry
        if last != output or epoch != following.epoch:
            answers.update(near, output, 0, following.epoch)
            return None
        repeats = min(repeats + 1, FingerprintTable.MAX_COUNT)
        answers.update(near, output, repeats, following.epoch)
        if repeats < self.no_progress_threshold:
            return None
        found = state.near.get(near)
        calls = found[0] if found is not None else 0
        if calls < self.threshold:
            return None
        tool = event.tool_name or "a tool"
        return Signal(
            detector=self.name,
            kind="near_duplicate",
            score=growing_score(calls, self.threshold, 0.5),
            message=(
                f"{tool} called {calls} times with near-identical arguments, the same result "
                f"{repeats + 1} times"
            ),
            evidence={
                "tool": event.tool_name,
                "count": calls,
                "threshold": self.threshold,
                "unchanged_outputs": repeats,
                "output_signature": event.signature,
            },
        )

    def _similar_count(self, event: Event, state: RepetitionState) -> int:
        """1 + how many of the tool's recent calls the hook scores as similar to this one."""
        tool = event.tool_name or ""
        text = call_text(tool, event.arguments, self.config.signature_max_chars)
        window = state.similar_texts.get(tool)
        if window is None:
            window = deque(maxlen=SIMILARITY_WINDOW)
        matches = 1
        for previous in window:
            hook = self.similarity
            if hook is None:
                break
            try:
                score = float(hook(previous, text))
            except Exception as exc:
                self._disable_hook(exc)
                break
            if score >= self.similarity_threshold:
                matches += 1
        window.append(text)
        touch(state.similar_texts, tool, window, SIMILARITY_TOOLS)
        return matches

    def _disable_hook(self, exc: Exception) -> None:
        if self.similarity is not None:
            self.similarity = None
            logger.warning(
                "otel-loopguard: similarity hook %r failed (%s: %s); similarity matching is off",
                self.config.similarity,
                type(exc).__name__,
                exc,
            )

    def export_state(self, state: RepetitionState) -> dict[str, Any]:
        data: dict[str, Any] = {
            "exact": state.exact.to_json(),
            "near": state.near.to_json(),
            "last": state.last_signature,
            "streak": state.streak,
            "answered": [
                state.last_call,
                state.last_near,
                state.answered_near,
                state.answered_output,
            ],
        }
        following = state.following
        if following is not None:
            data["following"] = {
                "answers": following.answers.to_json(),
                "calls": following.calls.tolist(),
                "nears": following.nears.tolist(),
                "outputs": following.outputs.tolist(),
                "epoch": following.epoch,
            }
        # the hook's texts are raw (capped) arguments: persisted only with content capture on
        if self.config.capture_content and state.similar_texts:
            data["similar"] = [[tool, list(texts)] for tool, texts in state.similar_texts.items()]
        return data

    def restore_state(self, data: dict[str, Any]) -> RepetitionState:
        state = RepetitionState(self.cap)
        state.exact.load_json(data.get("exact"))
        state.near.load_json(data.get("near"))
        state.last_signature = str(data.get("last") or "")
        state.streak = int(data.get("streak") or 0)
        answered = _fingerprints(data.get("answered"))
        if len(answered) == 4:
            state.last_call, state.last_near, state.answered_near, state.answered_output = answered
        saved = data.get("following")
        if isinstance(saved, dict):
            state.following = _restore_following(saved)
        for tool, texts in (data.get("similar") or [])[-SIMILARITY_TOOLS:]:
            state.similar_texts[str(tool)] = deque(
                (str(text) for text in texts), maxlen=SIMILARITY_WINDOW
            )
        return state


def _restore_following(saved: dict[str, Any]) -> Following:
    """A :class:`Following` from its export; bad values are left out, never raised."""
    following = Following()
    following.answers.load_json(saved.get("answers"))
    calls, nears = _fingerprints(saved.get("calls")), _fingerprints(saved.get("nears"))
    if len(calls) == len(nears):  # else unpaired: forget the pairs
        following.calls.extend(calls[-RECENT_CALLS:])
        following.nears.extend(nears[-RECENT_CALLS:])
    following.outputs.extend(_fingerprints(saved.get("outputs"))[-RECENT_OUTPUTS:])
    following.epoch = int(saved.get("epoch") or 0) & _EPOCH_MASK
    return following


def _fingerprints(values: Any) -> list[int]:
    if not isinstance(values, list):
        return []
    return [v for v in values if isinstance(v, int) and 0 <= v <= _EPOCH_MASK]
