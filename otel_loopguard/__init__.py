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
from otel_loopguard.monitor import FirstDecision, Monitor, RunSummary
from otel_loopguard.policy import Policy, PolicyInput, load_policy

__version__ = "0.1.0"

__all__ = [
    "Action",
    "Decision",
    "ErrorInfo",
    "Event",
    "EventKind",
    "FirstDecision",
    "LoopGuardConfig",
    "LoopGuardInterrupt",
    "Monitor",
    "Policy",
    "PolicyInput",
    "RunEndState",
    "RunSummary",
    "Signal",
    "__version__",
    "load_policy",
]
