"""The detector contract.

A detector is stateless itself; its per-run state lives in an object it creates with
:meth:`Detector.new_state`, which the monitor keeps in the run. ``observe`` must be O(1)
amortized over bounded state (rolling windows, counters, hashes): a run of 1,000,000 events
costs the same per event as a run of 100. State must be exportable to a small JSON-able
dict and restorable, so a reloaded conversation continues where it was.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar, runtime_checkable

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Signal
from otel_loopguard.engine.detectors.counters import RunCounters
from otel_loopguard.engine.events import Event

__all__ = ["Detector", "DetectorFactory", "RunCounters", "build_default_detectors", "mypyc_attr"]

_Class = TypeVar("_Class")

try:  # the compiled build's class options; mypy_extensions comes with mypy
    from mypy_extensions import mypyc_attr
except ImportError:  # a pure-Python install: the options mean nothing, the decorator no-op

    def mypyc_attr(*attrs: str, **options: Any) -> Callable[[_Class], _Class]:  # type: ignore[misc]
        return lambda cls: cls


@runtime_checkable
class Detector(Protocol):
    """One loop behaviour. ``name`` is the ``detector`` label on signals and metrics."""

    @property
    def name(self) -> str:
        """The ``detector`` label (a class attribute in the built-in detectors)."""
        ...

    def new_state(self) -> Any:
        """Fresh, bounded per-run state."""
        ...

    def observe(self, event: Event, state: Any, counters: RunCounters) -> Signal | None:
        """Update ``state`` with ``event``; return a signal when the behaviour is present."""
        ...

    def export_state(self, state: Any) -> dict[str, Any]:
        """A small JSON-able form of ``state``."""
        ...

    def restore_state(self, data: dict[str, Any]) -> Any:
        """Inverse of :meth:`export_state`; tolerate missing keys (older exports)."""
        ...


DetectorFactory = Any  # Callable[[LoopGuardConfig], Detector]; kept loose for user plug-ins


def build_default_detectors(config: LoopGuardConfig) -> list[Detector]:
    """Every built-in detector, configured; the monitor's default set."""
    from otel_loopguard.engine.detectors import DEFAULT_DETECTORS

    return [factory(config) for factory in DEFAULT_DETECTORS]
