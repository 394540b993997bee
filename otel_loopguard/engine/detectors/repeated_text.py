"""Repeated text: the model answers with the same, or nearly the same, text turn after turn.

A model can loop in its own words, with or without tool calls: "I apologize for the
confusion, let me try again" every turn, the same plan restated, the same final answer
given again and again. The tool-call detectors do not see it. This one reads the text of
each model turn where the source recorded it (``gen_ai.output.messages`` and the indexed
output-message attributes of other dialects; our wrappers' model turns), as the
``llm_response`` event's ``signature`` / ``near_key``
(:func:`~otel_loopguard.engine.signatures.text_signature`) and a sketch of its content
words in ``details["text_sketch"]`` (:func:`~otel_loopguard.engine.signatures.text_sketch`):
hashes only, never the text.

Two turns say the same when their signatures or near keys are equal (the same words in
another order, case or punctuation), or their sketches share at least
:data:`SIMILAR_WORDS` of their content words (Jaccard over the word sets: "nearly the
same"). At ``repeated_text_threshold`` consecutive turns that each say the same as the
one before, the signal (kind ``repeating``) asks for a replan with a recommendation to
change course; at twice the threshold (kind ``persistent``) the default policy stops.

Not repeated text: a turn whose text differs; a short answer ("ok", "Done.", fewer than
:data:`MIN_WORDS` content words) or a short preamble beside tool calls ("Let me check the
next file." before each read, fewer than :data:`MIN_WORDS_WITH_CALLS`), which is skipped
and leaves the count as it was; a turn with no recorded text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Signal
from otel_loopguard.engine.detectors.base import RunCounters, mypyc_attr
from otel_loopguard.engine.detectors.state_io import export_dataclass, restore_dataclass
from otel_loopguard.engine.events import Event, EventKind

NAME = "repeated_text"
SIMILAR_WORDS = 0.75  # Jaccard of the content words from which two texts are "the same"
MIN_WORDS_WITH_CALLS = 6  # shorter text beside tool calls is a preamble: not judged
MIN_WORDS = 4  # shorter answers ("ok", "Done.", "Thanks!") may well repeat: not judged

_LLM_RESPONSE = EventKind.LLM_RESPONSE


@dataclass(slots=True, init=False)
class RepeatedTextState:
    """The last judged turn's hashes, and how many turns in a row said the same.

    ``sketch`` (word fingerprints) stays in memory: it is not exported with the state.
    """

    streak: int = 0
    signature: str = ""
    near_key: str = ""
    sketch: tuple[int, ...] = ()

    # Written out for mypyc, which leaves a generated __init__ interpreted (see Event)
    def __init__(
        self,
        streak: int = 0,
        signature: str = "",
        near_key: str = "",
        sketch: tuple[int, ...] = (),
    ) -> None:
        self.streak = streak
        self.signature = signature
        self.near_key = near_key
        self.sketch = sketch


def similar_sketches(first: tuple[int, ...], second: tuple[int, ...]) -> bool:
    """Do two word sketches share at least :data:`SIMILAR_WORDS` of their words?"""
    if not first or not second:
        return False
    one, other = set(first), set(second)
    return len(one & other) >= SIMILAR_WORDS * len(one | other)


@mypyc_attr(allow_interpreted_subclasses=True)
class RepeatedTextDetector:
    """Consecutive model turns with the same or nearly the same text."""

    name: ClassVar[str] = NAME
    event_kinds: ClassVar[frozenset[EventKind]] = frozenset({EventKind.LLM_RESPONSE})

    def __init__(self, config: LoopGuardConfig) -> None:
        self._threshold = config.repeated_text_threshold

    def new_state(self) -> RepeatedTextState:
        return RepeatedTextState()

    def observe(
        self, event: Event, state: RepeatedTextState, counters: RunCounters
    ) -> Signal | None:
        if event.kind is not _LLM_RESPONSE or not event.signature:
            return None  # no text recorded: nothing to compare
        found = event.details.get("text_sketch") if event.details else None
        sketch: tuple[int, ...] = tuple(found) if isinstance(found, (tuple, list)) else ()
        minimum = MIN_WORDS_WITH_CALLS if event.requested_tool_calls else MIN_WORDS
        if sketch and len(sketch) < minimum:
            return None  # a short answer, or a short preamble to tool calls
        same = bool(state.signature) and (
            event.signature == state.signature
            or (bool(event.near_key) and event.near_key == state.near_key)
            or similar_sketches(sketch, state.sketch)
        )
        state.streak = state.streak + 1 if same else 1
        state.signature, state.near_key, state.sketch = event.signature, event.near_key, sketch
        turns = state.streak
        if turns < self._threshold:
            return None
        persistent = turns >= 2 * self._threshold
        return Signal(
            detector=NAME,
            kind="persistent" if persistent else "repeating",
            score=min(0.95, 0.5 + 0.1 * (turns - self._threshold)),
            message=f"the model said the same thing {turns} turns in a row",
            evidence={"turns": turns, "threshold": self._threshold, "text": event.signature},
            recommendation=(
                f"You have given the same answer {turns} times in a row. It is not moving the "
                "task forward: change your approach, use a different tool or input, or "
                "finish with what you have and say what is missing."
            ),
        )

    def export_state(self, state: RepeatedTextState) -> dict[str, Any]:
        data = export_dataclass(state)
        data.pop("sketch", None)  # word fingerprints stay in the process
        return data

    def restore_state(self, data: dict[str, Any]) -> RepeatedTextState:
        state = restore_dataclass(RepeatedTextState, data)
        state.streak = max(0, state.streak)
        state.sketch = ()
        return state
