"""Replay saved spans through the monitor, as the on-line span processor would have seen them.

Exporters write a trace's spans as they end, in batches, so a trace's spans arrive close
together but not in order, and several traces interleave. :class:`TraceBuffer` holds the
spans of each trace only until the trace can be replayed:

* when its root span (no parent) has arrived and a span of another trace follows (a root
  ends last, and a batch or a Jaeger trace holds a trace's spans together), or
* when the buffer's span cap is reached (the trace buffered longest goes first), or
* at the end of the input.

A flushed trace is replayed as the span starts and ends the processor's hooks saw, in time
order, through the same span follower as on-line
(:class:`~otel_loopguard.spans.follower.SpanFollower`): each span gets its run identity
exactly as on-line (conversation id, else the outermost agent/workflow span enclosing it,
else the trace id), and its events go to :meth:`Monitor.observe_fresh`, whose clock is the
span's end time, so timeouts and the run TTL are measured in trace time.

A run keyed by its root span ends when that span is replayed; one keyed by its trace when
the trace has been replayed; one keyed by a conversation when it has been idle (in trace
time) for ``OTEL_LOOPGUARD_RUN_TTL`` or at the end of the input. Finished runs are handed
to ``on_run`` and forgotten, so memory follows the live runs and the buffered traces, not
the input size. Spans of a trace that arrive after it was replayed are replayed as a late
part of it (on-line they would also have found the run's root gone).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Action, Decision
from otel_loopguard.engine.detectors.base import Detector
from otel_loopguard.engine.events import Event, EventKind
from otel_loopguard.engine.monitor import Monitor, RunSummary
from otel_loopguard.engine.policy import Policy
from otel_loopguard.spans.classify import (
    AGENT,
    HANDOFF,
    LLM,
    OTHER,
    TOOL,
    WORKFLOW,
    SpanClass,
    classify_parts,
)
from otel_loopguard.spans.follower import SpanFollower, TraceState
from otel_loopguard.spans.identity import conversation_in
from otel_loopguard.spans.view import SpanView
from otel_loopguard.telemetry import DECISION_SPAN, RUN_SPAN, SCOPE_NAME

_OWN_SPANS = frozenset({DECISION_SPAN, RUN_SPAN})

# enum members as module constants: reading ``SpanClass.TOOL`` goes through the enum's
# metaclass and costs several times a global read, a dozen times per replayed span
_TOOL_CALL, _LLM_RESPONSE = EventKind.TOOL_CALL, EventKind.LLM_RESPONSE
_CONTINUE, _STOP = Action.CONTINUE, Action.STOP

#: spans held while waiting for their traces to complete (about 1-2 kB each)
DEFAULT_BUFFER_SPANS = 100_000
#: decisions kept per run for the report; later ones are counted, not kept
MAX_DECISIONS_PER_RUN = 200
#: trace ids kept per run (a long conversation can span many)
MAX_TRACE_IDS_PER_RUN = 10_000


@dataclass(slots=True)
class DecisionRecord:
    """One non-continue decision, where it happened in the run."""

    action: Action
    risk: float
    tool_call_index: int
    trace_id: str | None
    span_id: str | None
    detectors: tuple[str, ...]
    reasons: tuple[str, ...]
    recommendation: str | None = None
    event_kind: str | None = None
    tool_name: str | None = None
    arguments: Any = None  # raw content: reported only with content capture on
    output: Any = None


@dataclass(slots=True, init=False)
class RunRecord:
    """What the report says about one run; filled while the run is replayed."""

    run_id: str
    keyed_by: str
    agent: str | None = None
    trace_ids: dict[str, None] = field(default_factory=dict)  # ordered set
    tool_calls: int = 0
    events: int = 0
    spans: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    max_risk: float = 0.0
    final_action: Action = Action.CONTINUE
    decisions: list[DecisionRecord] = field(default_factory=list)
    decisions_dropped: int = 0
    first_stop: DecisionRecord | None = None
    # what the run did after STOP would have fired: what enforcing it would have saved
    after_stop_tool_calls: int = 0
    after_stop_llm_calls: int = 0
    after_stop_tokens: int = 0
    after_stop_cost: float | None = None
    cost: float | None = None
    end_state: str | None = None
    started_ns: int | None = None
    ended_ns: int | None = None
    last_seen_ns: int = 0
    _cost_at_stop: float | None = None

    # Written out for mypyc, which leaves a generated __init__ interpreted (see Event)
    def __init__(
        self,
        run_id: str,
        keyed_by: str,
        agent: str | None = None,
        trace_ids: dict[str, None] | None = None,
        tool_calls: int = 0,
        events: int = 0,
        spans: int = 0,
        input_tokens: int = 0,
        output_tokens: int = 0,
        max_risk: float = 0.0,
        final_action: Action = Action.CONTINUE,
        decisions: list[DecisionRecord] | None = None,
        decisions_dropped: int = 0,
        first_stop: DecisionRecord | None = None,
        after_stop_tool_calls: int = 0,
        after_stop_llm_calls: int = 0,
        after_stop_tokens: int = 0,
        after_stop_cost: float | None = None,
        cost: float | None = None,
        end_state: str | None = None,
        started_ns: int | None = None,
        ended_ns: int | None = None,
        last_seen_ns: int = 0,
        _cost_at_stop: float | None = None,
    ) -> None:
        self.run_id = run_id
        self.keyed_by = keyed_by
        self.agent = agent
        self.trace_ids = {} if trace_ids is None else trace_ids
        self.tool_calls = tool_calls
        self.events = events
        self.spans = spans
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.max_risk = max_risk
        self.final_action = final_action
        self.decisions = [] if decisions is None else decisions
        self.decisions_dropped = decisions_dropped
        self.first_stop = first_stop
        self.after_stop_tool_calls = after_stop_tool_calls
        self.after_stop_llm_calls = after_stop_llm_calls
        self.after_stop_tokens = after_stop_tokens
        self.after_stop_cost = after_stop_cost
        self.cost = cost
        self.end_state = end_state
        self.started_ns = started_ns
        self.ended_ns = ended_ns
        self.last_seen_ns = last_seen_ns
        self._cost_at_stop = _cost_at_stop

    @property
    def stopped(self) -> bool:
        return self.first_stop is not None


RunSink = Callable[[RunRecord], None]
#: told of each fresh decision as it is made (the detection service exports it at once)
DecisionSink = Callable[[RunRecord, DecisionRecord, Decision, Event], None]
#: ``(run_id, keyed_by)`` of a run just started in the monitor, and ``run_id`` of a run
#: whose agent span ended without ending the run (a conversation's turn): the detection
#: service loads and saves the run's state in the shared store there
RunStartSink = Callable[[str, str], None]
TurnEndSink = Callable[[str], None]


class TraceBuffer:
    """Spans per trace until the trace can be replayed; see the module docstring."""

    def __init__(self, max_spans: int = DEFAULT_BUFFER_SPANS) -> None:
        self.max_spans = max(1, max_spans)
        self._traces: OrderedDict[str, list[SpanView]] = OrderedDict()
        self._rooted: dict[str, None] = {}  # traces whose root arrived, oldest first
        self._last_trace: str | None = None
        self._last_spans: list[SpanView] = []  # the buffered spans of _last_trace
        self.buffered = 0
        self.peak_buffered = 0
        self.forced_flushes = 0  # traces replayed early because the cap was reached

    def add(self, view: SpanView) -> Sequence[list[SpanView]]:
        """Buffer ``view``; return the traces that are now complete."""
        trace_id = view.trace_id
        ready: Sequence[list[SpanView]] = ()
        if trace_id == self._last_trace:  # most spans: the trace of the span before
            spans = self._last_spans
        else:
            if self._rooted:
                ready = [self._pop(rooted) for rooted in list(self._rooted) if rooted != trace_id]
            self._last_trace = trace_id
            spans = self._last_spans = self._traces.setdefault(trace_id, [])
        spans.append(view)
        self.buffered += 1
        if self.buffered > self.peak_buffered:
            self.peak_buffered = self.buffered
        if view.parent_span_id is None:
            self._rooted[trace_id] = None
        if self.buffered > self.max_spans:
            ready = list(ready)
            while self.buffered > self.max_spans and self._traces:
                self.forced_flushes += 1
                ready.append(self._pop(next(iter(self._traces))))
        return ready

    def drain(self) -> list[list[SpanView]]:
        """Every trace still buffered, oldest first (end of input)."""
        return [self._pop(trace_id) for trace_id in list(self._traces)]

    def _pop(self, trace_id: str) -> list[SpanView]:
        spans = self._traces.pop(trace_id)
        self._rooted.pop(trace_id, None)
        if self._last_trace == trace_id:
            self._last_trace = None
        self.buffered -= len(spans)
        return spans


class Replayer:
    """Feeds spans to a :class:`Monitor` trace by trace and reports finished runs."""

    def __init__(
        self,
        config: LoopGuardConfig,
        on_run: RunSink,
        *,
        policy: Policy | None = None,
        detectors: Iterable[Detector] | None = None,
        buffer_spans: int = DEFAULT_BUFFER_SPANS,
        on_decision: DecisionSink | None = None,
        on_run_start: RunStartSink | None = None,
        on_turn_end: TurnEndSink | None = None,
    ) -> None:
        self.config = config
        self._on_decision = on_decision
        self._on_run_start = on_run_start
        self._on_turn_end = on_turn_end
        self._now = 0.0
        self._now_ns = 0
        # the monitor's clock is trace time: the time of the span start or end replayed
        self.monitor = Monitor(config, detectors=detectors, policy=policy, clock=self._clock)
        self._on_run = on_run
        self.buffer = TraceBuffer(buffer_spans)
        self._runs: OrderedDict[str, RunRecord] = OrderedDict()  # last-touched order
        # the one span follower, as on-line (trace state outlives one flush: a trace
        # replayed in parts), bounded like on-line; ids are hex already
        self.follower = SpanFollower(
            config,
            make_view=_view_itself,
            trace_hex=str,
            span_hex=str,
            max_traces=max(config.max_runs, 1000),
        )
        self._ttl_ns = int(config.run_ttl * 1e9)
        self._watermark_ns = 0
        self.spans = 0
        self.runs_finished = 0
        self.peak_live_runs = 0

    def _clock(self) -> float:
        return self._now

    @property
    def live_runs(self) -> int:
        return len(self._runs)

    # -- input -------------------------------------------------------------------------------

    def feed(self, views: Iterable[SpanView]) -> None:
        add = self.buffer.add
        replay = self._replay_trace
        for view in views:
            self.spans += 1
            for trace in add(view):
                replay(trace)

    def replay_part(self, spans: list[SpanView]) -> None:
        """Replay spans of one trace now, without buffering: the detection service's
        input, where a trace arrives in the parts its exporter batched (a later part is
        replayed as a late part of the trace, as a part flushed from the buffer is)."""
        self.spans += len(spans)
        self._replay_trace(spans)

    def finish_oldest_runs(self, keep: int) -> int:
        """Finish the least recently touched runs until at most ``keep`` are live (the
        detection service's bound on live runs); returns how many were finished."""
        finished = 0
        while len(self._runs) > keep:
            self._finish_run(next(iter(self._runs)))
            finished += 1
        return finished

    def finish(self) -> None:
        """End of input: replay what is buffered, end every run still open."""
        for trace in self.buffer.drain():
            self._replay_trace(trace)
        self.follower.traces.clear()
        for run_id in list(self._runs):
            self._finish_run(run_id)

    # -- one trace ---------------------------------------------------------------------------

    def _replay_trace(self, spans: list[SpanView]) -> None:
        """Replay span starts and ends in time order, as the processor's hooks saw them.

        Ties: starts before ends, parents start before their children and end after them,
        then file order. Each start or end is one integer key (time * 2, + 1 for an end),
        so when no two keys are equal (the usual case: nanosecond times) the order is one
        sort of integers and span depths are never needed. A start that changes nothing
        (a model or other span with a parent and no conversation id) is left out.
        """
        keys: list[int] = []
        entries: list[tuple[SpanView, SpanClass]] = []
        quiet_start = None  # the latest start left out: it would have set the clock last
        for view in spans:
            name = view.name
            if name in _OWN_SPANS and view.scope_name == SCOPE_NAME:
                continue
            attrs = view.attributes
            cls = classify_parts(name, attrs)
            start = view.start_time_unix_nano or 0
            end = view.end_time_unix_nano or start
            entry = (view, cls)
            if (
                view.parent_span_id is None
                or (cls is not OTHER and cls is not LLM)
                or conversation_in(attrs)  # (last: tool spans, most spans, skip it)
            ):
                keys.append(start * 2)
                entries.append(entry)
            elif quiet_start is None or start > quiet_start:
                quiet_start = start
            keys.append(end * 2 + 1)
            entries.append(entry)
        by_key = dict(zip(keys, entries, strict=True))
        timeline: list[tuple[int, tuple[SpanView, SpanClass]]]
        if len(by_key) == len(keys):
            timeline = sorted(by_key.items())  # unique keys: entries are never compared
        else:
            depth = _depths(spans)

            def tie_break(index: int) -> tuple[int, int]:
                key = keys[index]
                level = depth[entries[index][0].span_id]
                return key, -level if key & 1 else level

            order = sorted(range(len(keys)), key=tie_break)  # stable: then file order
            timeline = [(keys[index], entries[index]) for index in order]
        parent_is_tool = _ParentIsTool(entries)
        for key, (view, cls) in timeline:
            time_ns = key >> 1
            self._now_ns = time_ns
            self._now = time_ns / 1e9
            if not key & 1:
                self._span_started(view, cls, parent_is_tool)
                continue
            if time_ns > self._watermark_ns:
                self._watermark_ns = time_ns
            self._span_ended(view, cls)
        if quiet_start is not None and timeline and quiet_start > self._now_ns:
            self._now_ns = quiet_start
            self._now = quiet_start / 1e9
        self._expire_idle_runs()

    def _span_started(self, view: SpanView, cls: SpanClass, parent_is_tool: _ParentIsTool) -> None:
        parent = view.parent_span_id
        if parent is not None and cls is OTHER:
            return
        if cls is AGENT or cls is WORKFLOW:
            state = self.follower.get(view.trace_id)
            if state is not None and state.trace_run_used and not state.agents:
                # a late part whose agent span starts after an earlier part's spans were
                # fed to the run keyed by the trace: starting a run keyed by the agent span
                # now would split the run in two; the trace's run goes on, and ends with it
                return
        parent_is_tool.parent = parent
        started = self.follower.started(
            view.trace_id,
            view.span_id,
            parent,
            False,
            view.name,
            view.attributes,
            cls,
            None,
            parent_is_tool=parent_is_tool,
        )
        if started is not None:
            identity = started.identity
            self._record_for(identity.run_id, identity.keyed_by, view, started.agent)

    def _span_ended(self, view: SpanView, cls: SpanClass) -> None:
        """Feed one ended span, end the runs it ends."""
        follower = self.follower
        if cls is OTHER:
            state = follower.ended_other(view.trace_id, view.span_id, view.parent_span_id is None)
            if state is not None:
                self._finish_run(state.hex_trace_id)
            return
        ended = follower.ended(
            view.trace_id,
            view.span_id,
            view.parent_span_id,
            False,
            view.name,
            view.attributes,
            cls,
            view,
        )
        identity = ended.identity
        run_id = identity.run_id
        actor = ended.actor.name if ended.actor is not None else None
        if cls is AGENT or cls is WORKFLOW:
            self._record_for(run_id, identity.keyed_by, view, actor).spans += 1
            if ended.ended_root is not None:
                if identity.keyed_by.ends_with_root_span:
                    self._finish_run(run_id)
                elif self._on_turn_end is not None:
                    self._on_turn_end(run_id)
        elif ended.events:
            record = self._record_for(run_id, identity.keyed_by, view, actor)
            record.spans += 1
            for event in ended.events:
                self._observe(record, event)
        if ended.trace_ended:
            self._finish_run(view.trace_id)

    def _record_for(
        self, run_id: str, keyed_by: str, view: SpanView, agent: str | None
    ) -> RunRecord:
        record = self._runs.get(run_id)
        if record is not None and self._now_ns - record.last_seen_ns > self._ttl_ns:
            # idle past the TTL in trace time: on-line, the monitor would start afresh too
            self._finish_run(run_id)
            record = None
        if record is None:
            record = self._runs[run_id] = RunRecord(run_id, keyed_by)
            record.started_ns = view.start_time_unix_nano
            self.monitor.start_run(run_id, agent=agent, keyed_by=keyed_by)  # type: ignore[arg-type]
            if self._on_run_start is not None:
                self._on_run_start(run_id, keyed_by)
            if len(self._runs) > self.peak_live_runs:
                self.peak_live_runs = len(self._runs)
        else:
            self._runs.move_to_end(run_id)
        end_ns = view.end_time_unix_nano or view.start_time_unix_nano or 0
        if end_ns > record.last_seen_ns:
            record.last_seen_ns = end_ns
            record.ended_ns = end_ns
        if record.agent is None and agent:
            record.agent = agent
        if len(record.trace_ids) < MAX_TRACE_IDS_PER_RUN:
            record.trace_ids[view.trace_id] = None
        return record

    def _observe(self, record: RunRecord, event: Event) -> None:
        record.events += 1
        kind = event.kind
        stopped = record.first_stop is not None
        if kind is _TOOL_CALL:
            record.tool_calls += 1
            if stopped:
                record.after_stop_tool_calls += 1
        elif kind is _LLM_RESPONSE:
            tokens = (event.input_tokens or 0) + (event.output_tokens or 0)
            record.input_tokens += event.input_tokens or 0
            record.output_tokens += event.output_tokens or 0
            if stopped:
                record.after_stop_llm_calls += 1
                record.after_stop_tokens += tokens
        if record.agent is None and event.actor:
            record.agent = event.actor
        decision, fresh = self.monitor.observe_fresh(event)
        if fresh:  # not continue, nor the run's standing STOP repeated for later events
            self._record_decision(record, decision, event)

    def _record_decision(self, record: RunRecord, decision: Decision, event: Event) -> None:
        item = DecisionRecord(
            action=decision.action,
            risk=float(decision.risk),
            tool_call_index=record.tool_calls,
            trace_id=event.trace_id,
            span_id=event.span_id,
            detectors=decision.detectors,
            reasons=tuple(signal.message for signal in decision.reasons),
            recommendation=decision.recommendation,
            event_kind=EventKind(event.kind).value,
            tool_name=event.tool_name,
            arguments=event.arguments if self.config.capture_content else None,
            output=event.output if self.config.capture_content else None,
        )
        if decision.risk > record.max_risk:
            record.max_risk = float(decision.risk)
        if decision.action > record.final_action:
            record.final_action = decision.action
        if len(record.decisions) < MAX_DECISIONS_PER_RUN:
            record.decisions.append(item)
        else:
            record.decisions_dropped += 1
        if decision.action is _STOP and record.first_stop is None:
            record.first_stop = item
            snapshot = self.monitor.run_snapshot(record.run_id)
            record._cost_at_stop = snapshot.counters.cost if snapshot is not None else None
        if self._on_decision is not None:
            self._on_decision(record, item, decision, event)

    # -- run ends ----------------------------------------------------------------------------

    def _expire_idle_runs(self) -> None:
        """Finish conversation runs idle (in trace time) past the TTL, oldest first."""
        deadline = self._watermark_ns - self._ttl_ns
        while self._runs:
            run_id, record = next(iter(self._runs.items()))
            if record.last_seen_ns >= deadline:
                break
            self._finish_run(run_id)

    def _finish_run(self, run_id: str) -> None:
        record = self._runs.pop(run_id, None)
        if record is None:
            return
        summary = self.monitor.end_run(run_id)
        if summary is not None:
            _merge_summary(record, summary)
        self.runs_finished += 1
        self._on_run(record)


def _merge_summary(record: RunRecord, summary: RunSummary) -> None:
    """Take what only the monitor knows: cost (from the price table), end state, agent."""
    record.cost = summary.counters.cost
    record.end_state = summary.end_state.value if summary.end_state is not None else None
    if record.agent is None:
        record.agent = summary.agent
    if record.first_stop is not None and record.cost is not None:
        at_stop = record._cost_at_stop
        if at_stop is not None:
            record.after_stop_cost = max(record.cost - at_stop, 0.0)


def _view_itself(
    view: SpanView, _name: str, _attributes: Any, _state: TraceState, _span_id: Any
) -> SpanView:
    """The follower's ``make_view`` in replay: the saved span is its view already."""
    return view


class _ParentIsTool:
    """Whether the span starting now has a tool span as parent (the follower asks it only
    for an MCP tool request inside another span, the on-line processor looks at the live
    parent span); the classes of the trace's spans are collected on the first question."""

    __slots__ = ("classes", "entries", "parent")

    def __init__(self, entries: list[tuple[SpanView, SpanClass]]) -> None:
        self.entries = entries
        self.classes: dict[str, SpanClass] | None = None
        self.parent: str | None = None

    def __call__(self) -> bool:
        classes = self.classes
        if classes is None:
            classes = self.classes = {view.span_id: cls for view, cls in self.entries}
        return classes.get(self.parent or "") in (TOOL, HANDOFF)


def _depths(spans: list[SpanView]) -> dict[str, int]:
    """Depth of each span in its (possibly partial) tree; a missing parent counts as a root."""
    parents = {view.span_id: view.parent_span_id for view in spans}
    depth: dict[str, int] = {}
    for view in spans:
        path: list[str] = []
        node: str | None = view.span_id
        while node is not None and node not in depth and node in parents and len(path) < 10_000:
            path.append(node)
            parent = parents[node]
            node = parent if parent != node else None
            if node in path:  # a cycle in broken data
                node = None
        base = depth.get(node, -1) if node is not None else -1
        for offset, span_id in enumerate(reversed(path), 1):
            depth[span_id] = base + offset
    return depth
