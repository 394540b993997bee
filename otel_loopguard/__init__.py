"""otel-loopguard: detect and stop AI agent loops from OpenTelemetry spans, while they run.

This module is the public face: everything an application or a framework package imports
from otel-loopguard is here (framework packages also use :mod:`otel_loopguard.kit`).

The detection core (:mod:`otel_loopguard.engine`) imports no OpenTelemetry; the names that
need the SDK (the processor, the guard, ``agent_run``...) are loaded on first use, so
``import otel_loopguard`` stays cheap and the engine stays usable where OpenTelemetry is not
installed.
"""

from __future__ import annotations

from importlib.machinery import EXTENSION_SUFFIXES
from typing import TYPE_CHECKING

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
from otel_loopguard.lazy_names import lazy_names

if TYPE_CHECKING:  # pragma: no cover
    from otel_loopguard.guard import LoopGuard, RunHandle, current_run, get_guard, set_guard
    from otel_loopguard.guard.decorators import agent_run, loopguard_tool, tool_span
    from otel_loopguard.processor import LoopGuardSpanProcessor

__version__ = "0.1.0"

#: True when this install's hot path is the mypyc-compiled build (a wheel built with
#: ``HATCH_BUILD_HOOK_ENABLE_MYPYC=true``), False for the pure-Python one
COMPILED: bool = (_monitor.__file__ or "").endswith(tuple(EXTENSION_SUFFIXES))

#: the modules that need OpenTelemetry, and the names each one gives
_LAZY = {
    "otel_loopguard.processor": ("LoopGuardSpanProcessor",),
    "otel_loopguard.guard": ("LoopGuard", "RunHandle", "current_run", "get_guard", "set_guard"),
    "otel_loopguard.guard.decorators": ("agent_run", "loopguard_tool", "tool_span"),
}


__getattr__ = lazy_names(__name__, _LAZY, globals())


__all__ = [
    "COMPILED",
    "Action",
    "Decision",
    "ErrorInfo",
    "Event",
    "EventKind",
    "FirstDecision",
    "LoopGuard",
    "LoopGuardConfig",
    "LoopGuardInterrupt",
    "LoopGuardSpanProcessor",
    "Monitor",
    "Policy",
    "PolicyInput",
    "RunEndState",
    "RunHandle",
    "RunSummary",
    "Signal",
    "__version__",
    "agent_run",
    "current_run",
    "get_guard",
    "load_policy",
    "loopguard_tool",
    "set_guard",
    "tool_span",
]
