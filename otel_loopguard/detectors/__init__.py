"""Loop detectors, one behaviour per module; ``DEFAULT_DETECTORS`` lists their factories."""

from __future__ import annotations

from collections.abc import Callable

from otel_loopguard.config import LoopGuardConfig
from otel_loopguard.detectors.base import Detector, RunCounters

DEFAULT_DETECTORS: list[Callable[[LoopGuardConfig], Detector]] = []

__all__ = ["DEFAULT_DETECTORS", "Detector", "RunCounters"]
