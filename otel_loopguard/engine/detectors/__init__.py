"""Loop detectors, one behaviour per module; ``DEFAULT_DETECTORS`` lists their factories."""

from __future__ import annotations

from collections.abc import Callable

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.detectors.action_cycle import ActionCycleDetector
from otel_loopguard.engine.detectors.base import Detector, RunCounters
from otel_loopguard.engine.detectors.budget import BudgetDetector
from otel_loopguard.engine.detectors.budget_proximity import BudgetProximityDetector
from otel_loopguard.engine.detectors.handoff_cycle import HandoffCycleDetector
from otel_loopguard.engine.detectors.no_progress import NoProgressDetector
from otel_loopguard.engine.detectors.permanent_failure import PermanentFailureDetector
from otel_loopguard.engine.detectors.premature_end import PrematureEndDetector
from otel_loopguard.engine.detectors.read_only_loop import ReadOnlyLoopDetector
from otel_loopguard.engine.detectors.repeated_text import RepeatedTextDetector
from otel_loopguard.engine.detectors.repeated_tool_steps import RepeatedToolStepsDetector
from otel_loopguard.engine.detectors.repetition import RepetitionDetector
from otel_loopguard.engine.detectors.shell_failure import ShellFailureDetector
from otel_loopguard.engine.detectors.stale_results import StaleResultsDetector
from otel_loopguard.engine.detectors.truncation import TruncationDetector

#: the loop detectors: what the calls and their outcomes say about the run
CALL_DETECTORS: tuple[Callable[[LoopGuardConfig], Detector], ...] = (
    RepetitionDetector,
    RepeatedToolStepsDetector,
    NoProgressDetector,
    ActionCycleDetector,
    PermanentFailureDetector,
    HandoffCycleDetector,
    StaleResultsDetector,
)
#: the budgets and the agent-loop guards: limits, truncation, premature ends, read-only
#: loops, shell failures, the model repeating its own text
GUARD_DETECTORS: tuple[Callable[[LoopGuardConfig], Detector], ...] = (
    BudgetDetector,
    BudgetProximityDetector,
    TruncationDetector,
    PrematureEndDetector,
    ReadOnlyLoopDetector,
    ShellFailureDetector,
    RepeatedTextDetector,
)
DEFAULT_DETECTORS: list[Callable[[LoopGuardConfig], Detector]] = [
    *CALL_DETECTORS,
    *GUARD_DETECTORS,
]

__all__ = ["CALL_DETECTORS", "DEFAULT_DETECTORS", "GUARD_DETECTORS", "Detector", "RunCounters"]
