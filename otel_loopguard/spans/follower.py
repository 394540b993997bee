"""Per-trace bookkeeping of spans that start and end: open agent spans, local roots,
conversation ids, run identity per trace."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from otel_loopguard.engine.run_identity import RunIdentity, run_identity


@dataclass(slots=True)
class OpenAgent:
    """An agent or workflow span that has started and not ended yet."""

    span_id: int
    name: str | None
    span: Any  # the live SDK span (to add decision events to) or None
    managed: bool


class TraceState:
    """What is open in one trace: its local root, agent spans, conversation.

    Written without a lock where one step is one atomic operation under the GIL (a set's
    ``add``/``discard``, an attribute store): a tool span's end, the common case, then
    touches no lock that other threads contend for. ``agents`` is a tuple replaced whole
    (under the tracker's lock, when an agent span starts or ends), so a reader takes one
    consistent snapshot by reading the attribute once.
    """

    __slots__ = (
        "_hex_trace_id",
        "_identity",
        "agents",
        "conversation",
        "fed_tool_parents",
        "local_root",
        "trace_id",
        "trace_run_used",
    )

    def __init__(self, trace_id: int = 0) -> None:
        self.trace_id = trace_id
        self.local_root: int | None = None
        self.agents: tuple[OpenAgent, ...] = ()
        # span ids that have a tool span child already fed (its parent must not be fed again)
        self.fed_tool_parents: set[int] = set()
        self.conversation: str | None = None
        self.trace_run_used = False
        self._hex_trace_id: str | None = None
        # (conversation, root agent, RunIdentity) of the last span: most spans of a trace
        # share both, and the identity's strings are then not formatted again
        self._identity: tuple[str | None, OpenAgent | None, RunIdentity] | None = None

    def root_agent(self) -> OpenAgent | None:
        agents = self.agents
        return agents[0] if agents else None

    def innermost_agent(self) -> OpenAgent | None:
        agents = self.agents
        return agents[-1] if agents else None

    def add_agent(self, agent: OpenAgent) -> None:
        """Call with the tracker's lock held."""
        self.agents = (*self.agents, agent)

    def remove_agent(self, span_id: int) -> OpenAgent | None:
        """The open agent span ``span_id``, taken out; call with the tracker's lock held."""
        agents = self.agents
        for index, agent in enumerate(agents):
            if agent.span_id == span_id:
                self.agents = agents[:index] + agents[index + 1 :]
                return agent
        return None

    @property
    def hex_trace_id(self) -> str:
        hex_id = self._hex_trace_id
        if hex_id is None:
            hex_id = self._hex_trace_id = format(self.trace_id, "032x")
        return hex_id

    def identity(self, conversation: str | None, root: OpenAgent | None) -> RunIdentity:
        """:func:`~otel_loopguard.spans.mapping.run_identity` of a span in this trace, given
        its conversation and the outermost open agent span; the last answer is reused."""
        cached = self._identity
        if cached is not None and cached[1] is root and cached[0] == conversation:
            return cached[2]
        identity = run_identity(
            self.hex_trace_id,
            conversation=conversation,
            root_span_id=format(root.span_id, "016x") if root is not None else None,
        )
        self._identity = (conversation, root, identity)
        return identity


class TraceTracker:
    """Bounded map trace id -> :class:`TraceState` (oldest dropped first).

    Only the processor's ``on_start``/``on_end`` and the gate touch it; all methods are
    O(1). ``get`` and ``drop`` are single dictionary operations (atomic under the GIL) and
    take no lock; ``lock`` serializes ``get_or_create`` (look-up, insert, eviction) and the
    changes of a trace's open agent spans.

    Most traces of a service have no GenAI span at all: their local root is only noted
    (:meth:`note_root`, one dictionary entry) and a state is made when a GenAI span of the
    trace, or the gate, first needs one (:meth:`tracked`).
    """

    def __init__(self, max_traces: int = 10_000) -> None:
        self._traces: OrderedDict[int, TraceState] = OrderedDict()
        #: trace id -> local root span id, for traces that have no state (yet)
        self.roots: dict[int, int] = {}
        self._max = max_traces
        self.lock = threading.Lock()
        self.dropped = 0

    def get(self, trace_id: int) -> TraceState | None:
        return self._traces.get(trace_id)

    def tracked(self, trace_id: int) -> TraceState | None:
        """The trace's state; made now if only its local root was noted so far."""
        state = self._traces.get(trace_id)
        if state is None and trace_id in self.roots:
            with self.lock:
                state = self.get_or_create(trace_id)
        return state

    def get_or_create(self, trace_id: int) -> TraceState:
        """Call with ``lock`` held."""
        traces = self._traces
        state = traces.get(trace_id)
        if state is None:
            state = TraceState(trace_id)
            state.local_root = self.roots.pop(trace_id, None)
            traces[trace_id] = state
            if len(traces) > self._max:
                traces.popitem(last=False)
                self.dropped += 1
        return state

    def note_root(self, trace_id: int, span_id: int) -> None:
        """The local root of a trace started; the first one noted counts."""
        state = self._traces.get(trace_id)
        if state is not None:
            if state.local_root is None:
                state.local_root = span_id
            return
        roots = self.roots
        roots.setdefault(trace_id, span_id)
        if len(roots) > self._max:  # roots that never end: stay bounded
            with self.lock:
                while len(roots) > self._max:
                    try:  # the oldest; other threads may end roots meanwhile (no lock there)
                        roots.pop(next(iter(roots)), None)
                    except (StopIteration, RuntimeError):
                        break
                    self.dropped += 1

    def end_root(self, trace_id: int, span_id: int) -> None:
        """A span of a trace without state ended: forget the trace if it was its root."""
        roots = self.roots
        if roots.get(trace_id) == span_id:
            roots.pop(trace_id, None)

    def drop(self, trace_id: int) -> TraceState | None:
        return self._traces.pop(trace_id, None)

    def __len__(self) -> int:
        return len(self._traces) + len(self.roots)
