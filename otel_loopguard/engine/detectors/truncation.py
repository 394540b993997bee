"""Model output cut off at the token limit, answered with a continuation up to a limit.

A model that stops for ``length`` / ``max_tokens`` left its answer unfinished. The usual
repair is to ask it to continue. Each truncation is a ``recovery`` signal carrying the
continuation prompt in :attr:`Signal.recommendation`, until ``max_tokens_recoveries``
continuations were used. After that, as the reference agent loops do, the next truncation
is taken as a normal end of turn, not an error: kind ``ended`` (the policy warns).
Truncation alone never stops a run; a model that keeps rewriting the same long output is
stopped by other evidence (its repeated text, a budget). ``truncation_stops``
(``OTEL_LOOPGUARD_TRUNCATION_STOPS=true``) restores the stop: the truncation after the
continuations is then ``exhausted`` and the policy stops.

Counting is **consecutive**: any model response that finished for another reason resets
it, because a continuation that let the model finish was a successful recovery, and a
later, unrelated truncation deserves its own continuations.

Finish reasons are compared case-insensitively across providers (OpenAI ``length``,
Anthropic ``max_tokens``, Gemini ``MAX_TOKENS``, ...): see
:mod:`otel_loopguard.engine.detectors.finish_reasons`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Signal
from otel_loopguard.engine.detectors.base import RunCounters, mypyc_attr
from otel_loopguard.engine.detectors.finish_reasons import TRUNCATION_REASONS, is_truncation
from otel_loopguard.engine.detectors.recoveries import recovery_or_exhausted
from otel_loopguard.engine.detectors.state_io import export_dataclass, restore_dataclass
from otel_loopguard.engine.events import Event, EventKind

NAME = "truncation"

# enum member lookups are slow on the hot path (Python 3.11): bind them once
_LLM_RESPONSE = EventKind.LLM_RESPONSE

CONTINUATION_PROMPT = (
    "Your previous response was cut off at the output token limit. Continue exactly where "
    "you stopped; do not repeat what you already wrote. If the rest is long, finish it in "
    "smaller parts."
)


@dataclass(slots=True, init=False)
class TruncationState:
    """Truncations in a row (reset by any other finish)."""

    consecutive: int = 0

    # Written out for mypyc, which leaves a generated __init__ interpreted (see Event)
    def __init__(
        self,
        consecutive: int = 0,
    ) -> None:
        self.consecutive = consecutive


@mypyc_attr(allow_interpreted_subclasses=True)
class TruncationDetector:
    """``recovery`` for each truncation up to ``max_tokens_recoveries``, then ``ended``
    (or ``exhausted`` with ``truncation_stops``)."""

    name: ClassVar[str] = NAME
    event_kinds: ClassVar[frozenset[EventKind]] = frozenset({EventKind.LLM_RESPONSE})

    def __init__(self, config: LoopGuardConfig) -> None:
        self._recoveries = config.max_tokens_recoveries
        self._stops = config.truncation_stops

    def new_state(self) -> TruncationState:
        return TruncationState()

    def observe(self, event: Event, state: TruncationState, counters: RunCounters) -> Signal | None:
        if event.kind is not _LLM_RESPONSE:
            return None
        if not is_truncation(event.finish_reason):
            state.consecutive = 0
            return None
        state.consecutive += 1
        evidence = {
            "finish_reason": (event.finish_reason or "")[:40],
            "truncations": state.consecutive,
            "max_recoveries": self._recoveries,
        }
        if event.output_tokens is not None:
            evidence["output_tokens"] = event.output_tokens
        if state.consecutive > self._recoveries and not self._stops:
            return Signal(
                detector=NAME,
                kind="ended",
                score=0.3,
                message=(
                    f"model output was cut off at the token limit {state.consecutive} times in "
                    f"a row; the {self._recoveries} continuation(s) allowed are used up, the "
                    "answer is taken as the end of the turn"
                ),
                evidence=evidence,
            )
        return recovery_or_exhausted(
            NAME,
            "model output was cut off at the token limit",
            state.consecutive,
            self._recoveries,
            "continuation",
            evidence,
            recommendation=CONTINUATION_PROMPT,
        )

    def export_state(self, state: TruncationState) -> dict[str, Any]:
        return export_dataclass(state)

    def restore_state(self, data: dict[str, Any]) -> TruncationState:
        return restore_dataclass(TruncationState, data)


__all__ = ["CONTINUATION_PROMPT", "TRUNCATION_REASONS", "TruncationDetector", "is_truncation"]
