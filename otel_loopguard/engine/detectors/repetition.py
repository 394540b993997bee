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
follows the answers of each near-duplicate key, by the no-progress rule: a repeat counts
when the answer is unchanged and nothing new happened in between (no first-time key, no
changed answer anywhere in the run). When a key whose calls were not all identical has had
``no_progress_threshold`` unchanged repeats and ``repetition_threshold`` calls, the answer
fires a ``near_duplicate`` signal whose evidence holds ``unchanged_outputs``, on which the
default policy stops. Paraphrases with different answers, distinct queries with the same
empty answer, and pages behind opaque cursors (different keys) never get there.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Any, ClassVar

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
NEAR_OF_CALL_CAP = 64  # exact call -> near key, for pairing answers with their key


class RepetitionState:
    __slots__ = (
        "answers",
        "epoch",
        "exact",
        "last_signature",
        "near",
        "near_of_call",
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
        # near key fingerprint -> (answer fingerprint, unchanged repeats, epoch of the last
        # answer, last exact call fingerprint, calls not all identical)
        self.answers = FingerprintTable(history_size, "IHIIB")
        self.near_of_call: dict[int, int] = {}  # exact call fingerprint -> near key's
        self.epoch = 0


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
        near_count = 0
        if self.near_enabled and event.near_key:
            # per agent within a run, like call_key (counters.agent_key: 0 for the run's own)
            near = (fingerprint(event.near_key) ^ counters.agent_key) or 1
            near_count = state.near.bump(near)
            self._follow(near, counters.call_key, state)
        count = state.exact.bump(counters.call_key)  # the signature's, from the monitor
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

    def _follow(self, near: int, call: int, state: RepetitionState) -> None:
        """Note a call of near key ``near``: a first-time key is new work (a new epoch)."""
        touch(state.near_of_call, call, near, NEAR_OF_CALL_CAP)
        answers = state.answers
        entry = answers.get(near)
        if entry is None:
            state.epoch = (state.epoch + 1) & _EPOCH_MASK
            answers.insert(near, 0, 0, 0, call, 0)
        elif entry[3] != call:  # another wording of the same call
            answers.update(near, entry[0], entry[1], entry[2], call, 1)

    def _answer(self, event: Event, state: RepetitionState, counters: RunCounters) -> Signal | None:
        """An answer to a near key's call: unchanged since its last one, with nothing new?"""
        near = state.near_of_call.get(counters.call_key) if counters.call_key else None
        if near is None or counters.failed:
            return None
        answers = state.answers
        entry = answers.get(near)
        output = counters.outcome_key
        if entry is None:
            return None
        last, repeats, epoch, call, varied = entry
        if last != output or epoch != state.epoch:
            if last != output:
                state.epoch = (state.epoch + 1) & _EPOCH_MASK  # a new or changed answer
            answers.update(near, output, 0, state.epoch, call, varied)
            return None
        repeats = min(repeats + 1, FingerprintTable.MAX_COUNT)
        answers.update(near, output, repeats, state.epoch, call, varied)
        if not varied or repeats < self.no_progress_threshold:
            return None  # identical calls: the no-progress detector's case
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
            "answers": state.answers.to_json(),
            "near_of_call": [[call, near] for call, near in state.near_of_call.items()],
            "epoch": state.epoch,
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
        state.answers.load_json(data.get("answers"))
        for pair in (data.get("near_of_call") or [])[-NEAR_OF_CALL_CAP:]:
            if isinstance(pair, list) and len(pair) == 2:
                state.near_of_call[int(pair[0])] = int(pair[1])
        state.epoch = int(data.get("epoch") or 0) & _EPOCH_MASK
        for tool, texts in (data.get("similar") or [])[-SIMILARITY_TOOLS:]:
            state.similar_texts[str(tool)] = deque(
                (str(text) for text in texts), maxlen=SIMILARITY_WINDOW
            )
        return state
