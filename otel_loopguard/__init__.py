"""otel-loopguard: detect and stop AI agent loops from OpenTelemetry spans, while they run."""

from importlib.machinery import EXTENSION_SUFFIXES

from otel_loopguard.engine import monitor as _monitor
from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import (
    Action,
    Decision,
    LoopGuardInterrupt,
    RunEndState,
    Signal,
)
from otel_loopguard.engine.events import ErrorInfo, Event, EventKind
from otel_loopguard.engine.monitor import FirstDecision, Monitor, RunSummary
from otel_loopguard.engine.policy import Policy, PolicyInput, load_policy

__version__ = "0.1.0"

#: True when this install's hot path is the mypyc-compiled build (a wheel built with
#: ``HATCH_BUILD_HOOK_ENABLE_MYPYC=true``), False for the pure-Python one
COMPILED: bool = (_monitor.__file__ or "").endswith(tuple(EXTENSION_SUFFIXES))

__all__ = [
    "COMPILED",
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
