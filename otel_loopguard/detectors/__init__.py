"""Loop detectors, one behaviour per module; ``DEFAULT_DETECTORS`` lists their factories."""

from __future__ import annotations

from collections.abc import Callable

from otel_loopguard.config import LoopGuardConfig
from otel_loopguard.detectors.action_cycle import ActionCycleDetector
from otel_loopguard.detectors.base import Detector, RunCounters
from otel_loopguard.detectors.budget import BudgetDetector
from otel_loopguard.detectors.budget_proximity import BudgetProximityDetector
from otel_loopguard.detectors.handoff_cycle import HandoffCycleDetector
from otel_loopguard.detectors.no_progress import NoProgressDetector
from otel_loopguard.detectors.permanent_failure import PermanentFailureDetector
from otel_loopguard.detectors.premature_end import PrematureEndDetector
from otel_loopguard.detectors.read_only_loop import ReadOnlyLoopDetector
from otel_loopguard.detectors.repeated_tool_steps import RepeatedToolStepsDetector
from otel_loopguard.detectors.repetition import RepetitionDetector
from otel_loopguard.detectors.shell_failure import ShellFailureDetector
from otel_loopguard.detectors.truncation import TruncationDetector

DEFAULT_DETECTORS: list[Callable[[LoopGuardConfig], Detector]] = [
    RepetitionDetector,
    RepeatedToolStepsDetector,
    NoProgressDetector,
    ActionCycleDetector,
    PermanentFailureDetector,
    HandoffCycleDetector,
    BudgetDetector,
    BudgetProximityDetector,
    TruncationDetector,
    PrematureEndDetector,
    ReadOnlyLoopDetector,
    ShellFailureDetector,
]

__all__ = ["DEFAULT_DETECTORS", "Detector", "RunCounters"]
