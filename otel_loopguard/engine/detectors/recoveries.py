"""The "recover N times, then give up" signal that premature_end and truncation share.

Both detectors answer a repairable slip (an empty end after failing tools, an answer cut
off at the token limit) the same way: a ``recovery`` signal carrying the repair prompt
while the repairs allowed last, then ``exhausted``. One builder keeps their scores and the
wording of the count ("recovery 2 of 3", "... allowed are used up") the same.
"""

from __future__ import annotations

from typing import Any

from otel_loopguard.engine.decisions import Signal


def recovery_or_exhausted(
    detector: str,
    situation: str,
    consecutive: int,
    allowed: int,
    repair: str,
    evidence: dict[str, Any],
    recommendation: str,
    detail: str = "",
) -> Signal:
    """``recovery`` (with ``recommendation``) for the first ``allowed`` slips in a row,
    ``exhausted`` after. ``situation`` says what happened ("model output was cut off at the
    token limit"); ``detail`` is added to it in the recovery message only; ``repair``
    names one repair in the exhausted message ("continuation")."""
    if consecutive <= allowed:
        return Signal(
            detector=detector,
            kind="recovery",
            score=0.5,
            message=f"{situation}{detail} (recovery {consecutive} of {allowed})",
            evidence=evidence,
            recommendation=recommendation,
        )
    return Signal(
        detector=detector,
        kind="exhausted",
        score=0.95,
        message=(
            f"{situation} {consecutive} times in a row; the {allowed} {repair}(s) allowed "
            "are used up"
        ),
        evidence=evidence,
    )


__all__ = ["recovery_or_exhausted"]
