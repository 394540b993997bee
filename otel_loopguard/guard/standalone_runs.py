"""Runs of gated calls made outside any run: no ``agent_run`` and no parent span.

``@loopguard_tool`` or ``tool_span`` called in a loop with nothing around it is one run
whether or not an OpenTelemetry SDK is configured. Without an SDK its spans carry no ids;
with one, every such call would be the root of a trace of its own, and a run per trace would
never see a call repeated. So calls outside any run and outside any parent span, in one
thread or one asyncio task, belong to one *standalone* run until
``OTEL_LOOPGUARD_STANDALONE_IDLE_GAP`` seconds pass without such a call; the next call then
starts a new run (``0``: every such call is a run of its own). Code running inside one of
these calls (a model call in the tool, nested gates) belongs to the same run through its
trace. A baggage conversation id, an ``agent_run`` or a parent span keep their own rules.
"""

from __future__ import annotations

import itertools
import sys
import threading
import time
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from otel_loopguard.engine.run_identity import STANDALONE, RunIdentity

#: traces whose local root is a standalone call, remembered (newest last) up to this many
_MAX_TRACES = 10_000


class _Slot:
    """One thread's or task's current standalone run."""

    __slots__ = ("identity", "last")

    def __init__(self, identity: RunIdentity, last: float) -> None:
        self.identity = identity
        self.last = last


class StandaloneRuns:
    """The standalone run of each thread and asyncio task, and the traces begun in one."""

    def __init__(self, idle_gap: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.idle_gap = idle_gap
        self._clock = clock
        self._threads = threading.local()
        self._tasks: weakref.WeakKeyDictionary[Any, _Slot] = weakref.WeakKeyDictionary()
        self._traces: OrderedDict[Any, RunIdentity] = OrderedDict()
        self._lock = threading.Lock()
        self._prefix = uuid.uuid4().hex[:8]
        self._numbers = itertools.count(1)

    def identity(self) -> RunIdentity:
        """The run of a call made now, here, outside any run and any parent span."""
        now = self._clock()
        task = _current_task()
        with self._lock:
            slot = self._tasks.get(task) if task is not None else self._thread_slot()
            if slot is None or self.idle_gap <= 0 or now - slot.last > self.idle_gap:
                slot = _Slot(self._new_identity(), now)
                if task is not None:
                    self._tasks[task] = slot
                else:
                    self._threads.slot = slot
            slot.last = now
            return slot.identity

    def begin_trace(self, trace_id: Any, identity: RunIdentity) -> None:
        """A standalone call is the local root of ``trace_id``: what runs inside it (a
        model call in the tool, a nested gate) belongs to its run."""
        with self._lock:
            self._traces[trace_id] = identity
            self._traces.move_to_end(trace_id)
            while len(self._traces) > _MAX_TRACES:
                self._traces.popitem(last=False)

    def in_trace(self, trace_id: Any) -> RunIdentity | None:
        """The standalone run ``trace_id`` was begun in, if it was."""
        if not self._traces:
            return None
        with self._lock:
            return self._traces.get(trace_id)

    def _thread_slot(self) -> _Slot | None:
        slot: _Slot | None = getattr(self._threads, "slot", None)
        return slot

    def _new_identity(self) -> RunIdentity:
        return RunIdentity(f"standalone-{self._prefix}-{next(self._numbers)}", STANDALONE)


def _current_task() -> Any:
    """The running asyncio task, or ``None`` (no asyncio, no running loop, not in a task)."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return None
    try:
        return asyncio.current_task()
    except RuntimeError:  # no running event loop in this thread
        return None
