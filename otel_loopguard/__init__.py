"""otel-loopguard: detect and stop AI agent loops from OpenTelemetry spans, while they run."""

from otel_loopguard.config import LoopGuardConfig
from otel_loopguard.decisions import (
    Action,
    Decision,
    LoopGuardInterrupt,
    RunEndState,
    Signal,
)
from otel_loopguard.events import ErrorInfo, Event, EventKind

__version__ = "0.1.0"

__all__ = [
    "Action",
    "Decision",
    "ErrorInfo",
    "Event",
    "EventKind",
    "LoopGuardConfig",
    "LoopGuardInterrupt",
    "RunEndState",
    "Signal",
    "__version__",
]
