"""The one span follower: span starts and ends in, run identities, events and run ends out.

The live span processor (SDK spans, integer ids), ``analyze`` replay (saved spans, hex ids)
and the detection service all follow spans with this one state machine, so a saved trace
replays exactly as the processor saw it. The follower knows spans and runs, not detection
nor export: its callers feed the events it returns to the monitor and export decisions.

Per trace it keeps (:class:`TraceState`) the local root, the open agent/workflow spans (the
outermost keys the run, the innermost is the actor and receives decision events), the
conversation id, and tool spans whose child tool span was already fed. Across traces it
keeps the tool spans nested in another tool's execution (the gate's own span, or an MCP
``tools/call`` request that is the transport of the enclosing tool span): the enclosing span
reports that execution, the nested one is not fed.

Rules (DESIGN "Run identity", "Living beside other instrumentation"):

* a span's run: its conversation id (its own, else the trace's), else the outermost open
  agent/workflow span, else the trace (:func:`~otel_loopguard.engine.run_identity.run_identity`);
* a tool span whose child tool span was fed describes the same call twice: the inner one
  counts; a tool span inside a gate tool span (``gate.gate_tool_ids``) or nested in the
  execution of one is not fed;
* one execution seen by two instrumentations, whatever parent each gives its span, counts
  once: a tool or model span matching an execution another source recorded in the trace
  (same tool-call id, else same tool name, at overlapping times) is not fed
  (:mod:`~otel_loopguard.spans.executions`; the gate records its own);
* a run keyed by its root span ends with that span; one keyed by its trace ends with the
  trace's local root; a conversation outlives its traces (the caller's TTL ends it).

Cheap by construction: a trace with no GenAI span has no state at all (only its spans'
classification is paid, by the caller's filter); a tool or model span's end takes no lock
(single-step changes, the open agents a tuple replaced whole under the lock when an agent
span starts or ends); the run identity is cached per trace.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, Protocol

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.events import Event
from otel_loopguard.engine.run_identity import TRACE, RunIdentity, run_identity
from otel_loopguard.spans.classify import (
    AGENT,
    HANDOFF,
    LLM,
    TOOL,
    WORKFLOW,
    SpanClass,
    is_mcp_tool_request,
)
from otel_loopguard.spans.dialects import (
    CLASS_NAMED_TOOLS,
    CONVERSATION_KEY_SET,
    KIND_RULES,
    NOT_MODEL_CALL_SUFFIXES,
    RESPONSE_ID_KEYS,
)
from otel_loopguard.spans.events import span_to_events
from otel_loopguard.spans.executions import GATE, Executions
from otel_loopguard.spans.identity import agent_name, conversation_in
from otel_loopguard.spans.tool_messages import (
    INPUT_MESSAGES_KEY,
    OPENINFERENCE_FIRST_ROLE,
    answered_calls,
)
from otel_loopguard.spans.view import SpanView

_MAX_NESTED = 100_000
_NOT_MODEL_CALLS = NOT_MODEL_CALL_SUFFIXES
_RESPONSE_ID_KEYS = RESPONSE_ID_KEYS
#: the kind attributes of the dialects, in table order: the first one a span carries names
#: its source (which instrumentation's view of an execution it is)
_KIND_KEYS = tuple(dict.fromkeys(key for key, _case, _kinds, _transport in KIND_RULES))


class GateSpans(Protocol):
    """The spans a gate (our wrappers) made and fed itself, as two live sets the follower
    reads (never writes): every span the gate fed (``managed_ids``) and its still-open tool
    spans (``gate_tool_ids``). Sets, not methods: the follower asks per span, on the host
    program's hot path, and a set look-up costs a fraction of a call."""

    @property
    def managed_ids(self) -> AbstractSet[Any]: ...

    @property
    def gate_tool_ids(self) -> AbstractSet[Any]: ...


class NoGate:
    """No gate: replay and the detection service see only exported spans."""

    managed_ids: AbstractSet[Any] = frozenset()
    gate_tool_ids: AbstractSet[Any] = frozenset()


@dataclass(slots=True, init=False)
class OpenAgent:
    """An agent or workflow span that has started and not ended yet."""

    span_id: Any
    name: str | None
    span: Any  # the live SDK span (to add decision events to), or None in replay
    managed: bool
    #: the conversation the agent is in: its own id, else its nearest keyed ancestor's,
    #: else the first one a span inside it ends with (ADK sets it only at a span's end)
    conversation: str | None = None
    #: the run its start began (:class:`RunStart`), when it was outermost
    started_run: str | None = None

    # Written out for mypyc, which leaves a generated __init__ interpreted (see Event)
    def __init__(
        self,
        span_id: Any,
        name: str | None,
        span: Any,
        managed: bool,
        conversation: str | None = None,
        started_run: str | None = None,
    ) -> None:
        self.span_id = span_id
        self.name = name
        self.span = span
        self.managed = managed
        self.conversation = conversation
        self.started_run = started_run


class TraceState:
    """What is open in one trace: its local root, agent spans, conversation.

    Written without a lock where one step is one atomic operation under the GIL (a set's
    ``add``/``discard``, an attribute store). ``agents`` is a tuple replaced whole (under the
    follower's lock), so a reader takes one consistent snapshot by reading it once.
    """

    __slots__ = (
        "_identity",
        "agents",
        "answered_ids",
        "conversation",
        "executions",
        "fed_model_parents",
        "fed_tool_parents",
        "hex_trace_id",
        "keyed",
        "late_spans",
        "local_root",
        "released",
        "tool_spans_seen",
        "trace_id",
        "trace_run_used",
    )

    def __init__(self, trace_id: Any, hex_trace_id: str) -> None:
        self.trace_id = trace_id
        self.hex_trace_id = hex_trace_id
        #: the local root span id when known (a GenAI root, or a root with a conversation);
        #: None: any local root of the trace that ends ends it
        self.local_root: Any = None
        self.agents: tuple[OpenAgent, ...] = ()
        # span ids that have a tool span child already fed (its parent must not be fed again)
        self.fed_tool_parents: set[Any] = set()
        # the same for model spans: a model span around a fed one is the same call
        # (OpenInference's LlamaIndex ``achat`` span around its ``chat`` span)
        self.fed_model_parents: set[Any] = set()
        #: open spans of an instrumentation that says what a span is only at its end
        #: (``started_late``)
        self.late_spans: set[Any] = set()
        #: open late spans let go as possible agents when a child started: they said by then
        #: that they are no agent (``started_late``)
        self.released: set[Any] = set()
        #: the trace's first conversation id (for spans with no keyed ancestor)
        self.conversation: str | None = None
        #: open spans in a conversation (their own id, or their nearest keyed ancestor's),
        #: by span id: a span without an id of its own is in its parent's (two sessions
        #: under one application span are two runs, not the trace's first)
        self.keyed: dict[Any, str] = {}
        #: a tool span ended in this trace (ours or another's): the tool answers in a model
        #: span's request are then not read as executions (spans.tool_messages)
        self.tool_spans_seen = False
        #: ids of the tool answers read from requests already (spans.tool_messages)
        self.answered_ids: set[str] = set()
        #: tool executions and model calls seen, by any source (spans.executions)
        self.executions = Executions()
        self.trace_run_used = False
        # (conversation, root agent, RunIdentity) of the last span: most spans of a trace
        # share both, and the identity's strings are then not formatted again
        self._identity: tuple[str | None, OpenAgent | None, RunIdentity] | None = None

    def root_agent(self) -> OpenAgent | None:
        agents = self.agents
        return agents[0] if agents else None

    def innermost_agent(self) -> OpenAgent | None:
        agents = self.agents
        return agents[-1] if agents else None

    def identity(
        self, conversation: str | None, root: OpenAgent | None, span_hex: Callable[[Any], str]
    ) -> RunIdentity:
        """The run identity of a span in this trace, given its conversation and the
        outermost open agent span; the last answer is reused."""
        cached = self._identity
        if cached is not None and cached[1] is root and cached[0] == conversation:
            return cached[2]
        identity = run_identity(
            self.hex_trace_id,
            conversation=conversation,
            root_span_id=span_hex(root.span_id) if root is not None else None,
        )
        self._identity = (conversation, root, identity)
        return identity


@dataclass(slots=True, init=False)
class RunStart:
    """An outermost agent/workflow span started a run (the caller starts it in the monitor)."""

    identity: RunIdentity
    agent: str | None

    # Written out for mypyc, which leaves a generated __init__ interpreted (see Event)
    def __init__(self, identity: RunIdentity, agent: str | None) -> None:
        self.identity = identity
        self.agent = agent


@dataclass(slots=True, init=False)
class SpanEnd:
    """What one ended GenAI span means, as the follower saw it.

    ``events`` are what to feed the monitor (empty for a span the gate fed itself, a
    duplicate, an agent span); ``view`` the span's view when one was made; ``actor`` the
    innermost agent still open (decision events go on its span); ``ended_root`` the run's
    outermost agent span when this was it; ``trace_ended``: the trace's local root ended
    and a run keyed by the trace was used (the caller ends run ``state.hex_trace_id``).
    """

    identity: RunIdentity
    events: list[Event]
    view: SpanView | None
    actor: OpenAgent | None
    ended_root: OpenAgent | None
    trace_ended: bool
    managed: bool
    state: TraceState

    # Written out for mypyc, which leaves a generated __init__ interpreted (see Event)
    def __init__(
        self,
        identity: RunIdentity,
        events: list[Event],
        view: SpanView | None,
        actor: OpenAgent | None,
        ended_root: OpenAgent | None,
        trace_ended: bool,
        managed: bool,
        state: TraceState,
    ) -> None:
        self.identity = identity
        self.events = events
        self.view = view
        self.actor = actor
        self.ended_root = ended_root
        self.trace_ended = trace_ended
        self.managed = managed
        self.state = state


class SpanFollower:
    """Span starts and ends into run identities, events and run ends (module docstring).

    ``trace_hex`` / ``span_hex`` turn the caller's ids into the hex text of run ids (the SDK
    uses integers, saved traces hex already); ``make_view(span, name, attributes, state,
    span_id)`` builds the :class:`SpanView` of an ending span (only for spans that are fed).
    ``model_span_ended(run_id, attributes)`` (optional) is told of every model span not fed
    by a gate and answers whether it is a duplicate of an answer reported already.
    """

    def __init__(
        self,
        config: LoopGuardConfig,
        *,
        make_view: Callable[[Any, str, Mapping[str, Any], TraceState, Any], SpanView],
        trace_hex: Callable[[Any], str],
        span_hex: Callable[[Any], str],
        gate: GateSpans | None = None,
        model_span_ended: Callable[[str, Mapping[str, Any]], bool] | None = None,
        max_traces: int = 10_000,
    ) -> None:
        self.config = config
        self.make_view = make_view
        self.trace_hex = trace_hex
        self.span_hex = span_hex
        gate = gate if gate is not None else NoGate()
        #: the gate's live sets (read only here; see GateSpans)
        self.managed_ids = gate.managed_ids
        self.gate_tool_ids = gate.gate_tool_ids
        self.model_span_ended = model_span_ended
        self.traces: OrderedDict[Any, TraceState] = OrderedDict()
        self.max_traces = max_traces
        self.lock = threading.Lock()
        self.dropped = 0
        # open tool spans nested (through tool spans only) inside a gate tool span, or an
        # MCP request that is the transport of its parent tool span: not fed
        self.nested: set[Any] = set()

    # -- trace states ------------------------------------------------------------------------

    def get(self, trace_id: Any) -> TraceState | None:
        return self.traces.get(trace_id)

    def state(self, trace_id: Any) -> TraceState:
        """The trace's state, made now if it has none."""
        state = self.traces.get(trace_id)
        if state is None:
            with self.lock:
                state = self._get_or_create(trace_id)
        return state

    def _get_or_create(self, trace_id: Any) -> TraceState:
        """Call with ``lock`` held."""
        traces = self.traces
        state = traces.get(trace_id)
        if state is None:
            state = traces[trace_id] = TraceState(trace_id, self.trace_hex(trace_id))
            if len(traces) > self.max_traces:
                traces.popitem(last=False)
                self.dropped += 1
        return state

    def __len__(self) -> int:
        return len(self.traces)

    # -- span starts ---------------------------------------------------------------------------

    def started(
        self,
        trace_id: Any,
        span_id: Any,
        parent_id: Any,
        parent_remote: bool,
        name: str,
        attributes: Mapping[str, Any],
        span_class: SpanClass,
        span: Any = None,
        parent_is_tool: Callable[[], bool] | None = None,
    ) -> RunStart | None:
        """A span started; returns the run it starts, if it is an outermost agent span not
        made by the gate. ``parent_is_tool()`` tells whether the parent is a tool span (only
        asked for an MCP tool request inside another span)."""
        is_root = parent_id is None or parent_remote
        if parent_id is not None and (span_class is TOOL or span_class is HANDOFF):
            transport = is_mcp_tool_request(attributes)
            if (
                (transport and parent_is_tool is not None and parent_is_tool())
                or parent_id in self.gate_tool_ids
                or parent_id in self.nested
            ):
                # inside a gate tool span (directly or through other tool spans: an MCP
                # library's span, the SDK's MCP send, an in-process server's span
                # continuing the request's propagated context), or an MCP request that
                # is the transport of its parent tool span: the enclosing span reports it
                nested = self.nested
                if len(nested) >= _MAX_NESTED:  # spans that never end: stay bounded
                    nested.clear()
                nested.add(span_id)
        run_root = span_class is AGENT or span_class is WORKFLOW
        conversation = conversation_in(attributes)
        if not (is_root or run_root):
            # tool and model spans are read when they end; only a conversation id they
            # carry from the start matters now (it keys the runs of the spans inside them)
            if conversation:
                state = self.state(trace_id)
                if state.conversation is None:
                    state.conversation = conversation
                _key(state.keyed, span_id, conversation)
            return None
        if not (run_root or conversation):
            return None  # a local root that is not GenAI: no state until one needs it
        with self.lock:
            state = self._get_or_create(trace_id)
            if is_root and state.local_root is None:
                state.local_root = span_id
            if conversation and state.conversation is None:
                state.conversation = conversation
            if not conversation and parent_id is not None and not parent_remote:
                conversation = state.keyed.get(parent_id)  # its nearest keyed ancestor's
            if conversation:
                _key(state.keyed, span_id, conversation)
            if not run_root:
                return None
            managed = span_id in self.managed_ids
            outermost = not state.agents
            agent = agent_name(SpanView(name, "", "", attributes=attributes))
            opened = OpenAgent(span_id, agent, span, managed, conversation)
            state.agents = (*state.agents, opened)
        if outermost and not managed:
            identity = run_identity(
                state.hex_trace_id,
                conversation=conversation or state.conversation,
                root_span_id=self.span_hex(span_id),
            )
            opened.started_run = identity.run_id
            return RunStart(identity, agent)
        return None

    def started_late(
        self,
        trace_id: Any,
        span_id: Any,
        parent_id: Any,
        parent_remote: bool,
        name: str,
        span: Any,
        parent_says: Callable[[], SpanClass | None] | None = None,
    ) -> None:
        """A span started of an instrumentation that sets its kind attribute only when the
        span ends, or just after it started (``Dialect.late_kind_scopes``: OpenInference's
        LangChain tracer; Langfuse). The outermost such span of its tree (its parent is none
        of them) may be an agent: it is held as one from now on, so the run is keyed by it
        (two invocations under one application span are two runs) and ends with it; when
        it ends as anything but an agent or workflow it is let go, and its events go to the
        run around it.

        ``parent_says()`` is the class the parent span says it has now (None while it says
        nothing): a held parent that said by its first child's start that it is no agent (a
        Langfuse ``span`` observation around the application's request) is let go then, and
        its children are the possible agents in its place."""
        state = self.state(trace_id)
        late = state.late_spans
        if len(late) >= _MAX_NESTED:  # spans that never end: stay bounded
            late.clear()
            state.released.clear()
        inner = parent_id is not None and not parent_remote and parent_id in late
        late.add(span_id)
        if inner and not (
            parent_id in state.released or self._released(state, parent_id, parent_says)
        ):
            return
        with self.lock:
            if (parent_id is None or parent_remote) and state.local_root is None:
                state.local_root = span_id
            state.agents = (*state.agents, OpenAgent(span_id, name or None, span, False))

    def _released(
        self,
        state: TraceState,
        parent_id: Any,
        parent_says: Callable[[], SpanClass | None] | None,
    ) -> bool:
        """The held late span ``parent_id`` says now that it is no agent: let go."""
        if parent_says is None:
            return False
        if not any(agent.span_id == parent_id for agent in state.agents):
            return False  # not held: an inner span's child
        says = parent_says()
        if says is None or says is AGENT or says is WORKFLOW:
            return False
        self._drop_late_agent(state, parent_id)
        state.released.add(parent_id)
        return True

    def _drop_late_agent(self, state: TraceState, span_id: Any) -> OpenAgent | None:
        """A span held by :meth:`started_late` ended: no longer an open agent."""
        with self.lock:
            agents = state.agents
            for index, agent in enumerate(agents):
                if agent.span_id == span_id:
                    state.agents = agents[:index] + agents[index + 1 :]
                    return agent
        return None

    # -- span ends -----------------------------------------------------------------------------

    def ended_other(self, trace_id: Any, span_id: Any, is_local_root: bool) -> TraceState | None:
        """A span that is not GenAI ended. Returns the trace's state when it was the trace's
        local root and a run keyed by the trace was used (the caller ends that run)."""
        state = self.traces.get(trace_id)
        if state is None:
            return None
        state.fed_tool_parents.discard(span_id)
        state.fed_model_parents.discard(span_id)
        if state.keyed:
            state.keyed.pop(span_id, None)
        late = state.late_spans
        if late and span_id in late:
            late.discard(span_id)
            state.released.discard(span_id)
            self._drop_late_agent(state, span_id)
        if not is_local_root or state.local_root not in (None, span_id):
            return None
        if self.traces.pop(trace_id, None) is not state:
            return None
        return state if state.trace_run_used else None

    def ended(
        self,
        trace_id: Any,
        span_id: Any,
        parent_id: Any,
        parent_remote: bool,
        name: str,
        attributes: Mapping[str, Any],
        span_class: SpanClass,
        span: Any,
    ) -> SpanEnd:
        """A GenAI span (tool, handoff, model, agent, workflow) ended."""
        state = self.traces.get(trace_id)
        if state is None:
            state = self.state(trace_id)
        managed = span_id in self.managed_ids
        fed_tool_parents = state.fed_tool_parents
        duplicate = False
        if span_class is TOOL or span_class is HANDOFF:
            state.tool_spans_seen = True
            duplicate = span_id in fed_tool_parents
            nested = self.nested
            if nested and span_id in nested:
                nested.discard(span_id)
                duplicate = True  # the enclosing span reports this execution
            elif parent_id is not None and not parent_remote:
                if parent_id in self.gate_tool_ids:
                    duplicate = True
                else:
                    fed_tool_parents.add(parent_id)
        elif span_class is LLM:
            fed_models = state.fed_model_parents
            if name.endswith(_NOT_MODEL_CALLS):
                duplicate = True  # a model class's other method, not a call
            elif parent_id is not None and not parent_remote and not managed:
                if fed_models and span_id in fed_models:
                    fed_models.discard(span_id)
                    duplicate = True  # a model span inside it reported this call
                if len(fed_models) >= _MAX_NESTED:  # spans that never end: stay bounded
                    fed_models.clear()
                fed_models.add(parent_id)  # and so does any model span around it
            elif fed_models and span_id in fed_models:
                fed_models.discard(span_id)
                duplicate = True
        if span_class is not LLM:
            state.fed_model_parents.discard(span_id)
        fed_tool_parents.discard(span_id)
        own: str | None = None
        if not CONVERSATION_KEY_SET.isdisjoint(attributes.keys()):  # most spans: one C call
            own = conversation_in(attributes)
            if own is not None:
                _adopt(state, own)
        keyed = state.keyed
        inherited = keyed.pop(span_id, None) if keyed else None
        agents = state.agents
        root = agents[0] if agents else None
        ending: OpenAgent | None = None
        run_root = span_class is AGENT or span_class is WORKFLOW
        late = state.late_spans
        if late and span_id in late:
            late.discard(span_id)
            state.released.discard(span_id)
            if not run_root and self._drop_late_agent(state, span_id) is not None:
                # held as a possible agent from its start, it is a tool or model span:
                # its events go to the run around it
                agents = state.agents
                root = agents[0] if agents else None
        if run_root:
            with self.lock:
                agents = state.agents
                for index, agent in enumerate(agents):
                    if agent.span_id == span_id:
                        ending = agent
                        state.agents = agents = agents[:index] + agents[index + 1 :]
                        break
        innermost = agents[-1] if agents else None
        conversation = own or inherited
        if conversation is None:
            # its nearest keyed ancestor's: its own agent's, its parent's, the agent it
            # runs in, else the trace's
            if ending is not None:
                conversation = ending.conversation
            if conversation is None and keyed and parent_id is not None and not parent_remote:
                conversation = keyed.get(parent_id)
            if conversation is None and innermost is not None:
                conversation = innermost.conversation
            if conversation is None:
                conversation = state.conversation
        is_local_root = (parent_id is None or parent_remote) and state.local_root in (
            None,
            span_id,
        )
        if is_local_root:
            self.traces.pop(trace_id, None)
        cached = state._identity  # TraceState.identity's cache, read inline (per span)
        if cached is not None and cached[1] is root and cached[0] == conversation:
            identity = cached[2]
        else:
            identity = state.identity(conversation, root, self.span_hex)
        if span_class is LLM and not managed and self.model_span_ended is not None:
            duplicate = self.model_span_ended(identity.run_id, attributes) or duplicate
        view: SpanView | None = None
        events: list[Event] = []
        if not (managed or duplicate or run_root):
            view = self.make_view(span, name, attributes, state, span_id)
            events = span_to_events(
                view,
                identity.run_id,
                self.config,
                actor=innermost.name if innermost is not None else None,
                span_class=span_class,
            )
            if (
                events
                and span_class is not HANDOFF
                and _seen_by_another(
                    state.executions, span_id, span_class, events[0], view, attributes
                )
            ):
                events = []  # the same execution, reported by another instrumentation
        if (
            span_class is LLM
            and not managed
            and not state.tool_spans_seen
            and (INPUT_MESSAGES_KEY in attributes or OPENINFERENCE_FIRST_ROLE in attributes)
        ):
            # a hand-written loop traced by a model-call instrumentation alone: the tools'
            # answers are in this request's messages (even when the turn itself was
            # reported by a wrapper: its answers are the request's, not the response's)
            if view is None:
                view = self.make_view(span, name, attributes, state, span_id)
            answered = answered_calls(
                view,
                identity.run_id,
                self.config,
                innermost.name if innermost is not None else None,
                state.answered_ids,
            )
            if answered:
                events = answered + events
        if events and identity.keyed_by is TRACE:
            state.trace_run_used = True
        return SpanEnd(
            identity,
            events,
            view,
            innermost,
            ending if ending is not None and ending is root else None,
            is_local_root and state.trace_run_used,
            managed,
            state,
        )

    # -- what the gate fed itself ------------------------------------------------------------

    def execution_started(
        self,
        trace_id: Any,
        key: Any,
        kind: str,
        name: str | None,
        call_id: str | None,
        start: int,
        end: int = 0,
    ) -> None:
        """The gate runs a tool (``kind`` ``"tool"``, ``end`` 0 until
        :meth:`execution_ended`) or reported a model turn (``"llm"``, from its start to
        ``end``): another instrumentation's span of the same execution is not fed
        (:mod:`otel_loopguard.spans.executions`)."""
        self.state(trace_id).executions.record(key, kind, name, call_id, start, end, GATE)

    def execution_ended(self, trace_id: Any, key: Any, end: int) -> None:
        state = self.traces.get(trace_id)
        if state is not None:
            state.executions.ended(key, end)

    # -- the gate's questions ------------------------------------------------------------------

    def identity_in_trace(self, trace_id: Any, conversation: str | None) -> RunIdentity:
        """The run of code running in this trace now (the gate's ``resolve_run``). A run
        keyed by the trace makes the trace's state, so the trace's local root ends it."""
        state = self.traces.get(trace_id)
        if state is None:
            if conversation:
                return run_identity(self.trace_hex(trace_id), conversation=conversation)
            state = self.state(trace_id)
        if not conversation:
            innermost = state.innermost_agent()
            if innermost is not None:
                conversation = innermost.conversation
        identity = state.identity(
            conversation or state.conversation, state.root_agent(), self.span_hex
        )
        if identity.keyed_by is TRACE:
            state.trace_run_used = True
        return identity


def _key(keyed: dict[Any, str], span_id: Any, conversation: str) -> None:
    """``span_id`` is in ``conversation`` (bounded: spans that never end are forgotten)."""
    if len(keyed) >= _MAX_NESTED:
        keyed.clear()
    keyed[span_id] = conversation


def _adopt(state: TraceState, conversation: str) -> None:
    """A span ended with its own conversation id: the open agents of other instrumentations
    that had none (theirs sets it only when a span ends: Google ADK's ``invoke_agent`` and
    ``invocation``) are in it, and so are the spans that end inside them from now on (not
    a run of their own: the model's spans and the tools' would be two runs). Our own
    ``agent_run`` (a managed agent) keeps the run it was given: the gate runs in it."""
    for agent in state.agents:
        if agent.conversation is None and not agent.managed:
            agent.conversation = conversation
            _key(state.keyed, agent.span_id, conversation)


def _seen_by_another(
    executions: Executions,
    span_id: Any,
    span_class: SpanClass,
    first: Event,
    view: SpanView,
    attributes: Mapping[str, Any],
) -> bool:
    """True when a tool or model span describes an execution another source (our gate,
    another instrumentation) reported already; else it is recorded for the others."""
    start = view.start_time_unix_nano
    end = view.end_time_unix_nano
    if not isinstance(start, int) or not isinstance(end, int):
        return False
    source = "other"
    for key in _KIND_KEYS:
        if key in attributes:
            source = key
            break
    if span_class is TOOL:
        kind, name, call_id, answer_id = "tool", first.tool_name, first.call_id, False
        if name in CLASS_NAMED_TOOLS:
            name = None  # named after the tool's class, its result not recorded: any tool
    else:
        kind, name, call_id = "llm", None, _response_id(attributes)
        answer_id = call_id is not None
    sources = executions.sources  # claim's first test, inlined: one source, no answer id
    if not (
        not sources or (len(sources) == 1 and source in sources and not answer_id)
    ) and executions.claim(kind, name, call_id, start, end, source, answer_id=answer_id):
        return True
    executions.record(span_id, kind, name, call_id, start, end, source)
    return False


def _response_id(attributes: Mapping[str, Any]) -> str | None:
    """A model span's answer id (``gen_ai.response.id``), when it has one."""
    for key in _RESPONSE_ID_KEYS:
        value = attributes.get(key)
        if value.__class__ is str and value:
            return value  # type: ignore[no-any-return]
    return None
