"""The monitor: per-run state, detectors and policy; one entry point for every adapter.

``pipeline.py`` (the :class:`Monitor` and its event pipeline), ``run_table.py`` (live runs,
LRU and TTL), ``run_state.py`` (one run's state, :class:`RunSummary`), ``persistence.py``
(a run to a JSON-able dict and back).
"""

from otel_loopguard.engine.monitor.persistence import EXPORT_VERSION
from otel_loopguard.engine.monitor.pipeline import DecisionListener, KeyedBy, Monitor
from otel_loopguard.engine.monitor.run_state import FirstDecision, RunSummary

__all__ = [
    "EXPORT_VERSION",
    "DecisionListener",
    "FirstDecision",
    "KeyedBy",
    "Monitor",
    "RunSummary",
]
