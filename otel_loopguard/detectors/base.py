"""The detector contract.

A detector is stateless itself; its per-run state lives in an object it creates with
:meth:`Detector.new_state`, which the monitor keeps in the run. ``observe`` must be O(1)
amortized over bounded state (rolling windows, counters, hashes): a run of 1,000,000 events
costs the same per event as a run of 100. State must be exportable to a small JSON-able
dict and restorable, so a reloaded conversation continues where it was.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

from otel_loopguard.config import LoopGuardConfig
from otel_loopguard.decisions import Signal
from otel_loopguard.events import Event

_Class = TypeVar("_Class")

try:  # the compiled build's class options; mypy_extensions comes with mypy
    from mypy_extensions import mypyc_attr
except ImportError:  # a pure-Python install: the options mean nothing, the decorator no-op

    def mypyc_attr(*attrs: str, **options: Any) -> Callable[[_Class], _Class]:  # type: ignore[misc]
        return lambda cls: cls


@dataclass(slots=True)
class RunCounters:
    """Run-wide counters the monitor maintains before detectors see an event.

    ``steps`` counts model turns (``llm_response`` events), ``tool_calls`` counts
    ``tool_call`` events. ``cost`` is ``None`` once any model's price is unknown.

    The last three fields describe the event being observed, worked out once by the monitor
    (:func:`~otel_loopguard.detectors.call_tracking.pair_tool_event`) so that the detectors
    that reason about calls and their answers do not each redo it: ``call_key`` is the
    fingerprint of a ``tool_call``'s signature, or for a ``tool_result`` / ``tool_error``
    that of the call it answers (0 when no call is known); ``outcome_key`` the fingerprint
    of a result's or error's signature (0 for other events); ``failed`` whether the outcome
    is a failure (a ``tool_error``, or a result flagged as an error, e.g. MCP ``isError``).
    """

    started_at: float = 0.0
    last_seen: float = 0.0
    now: float = 0.0
    events: int = 0
    steps: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = 0.0
    call_key: int = 0
    outcome_key: int = 0
    failed: bool = False

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


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
    from otel_loopguard.detectors import DEFAULT_DETECTORS

    return [factory(config) for factory in DEFAULT_DETECTORS]
