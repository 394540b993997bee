"""``guard.agent_run(...)``: the ``invoke_agent`` span of a run, current while it runs."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from otel_loopguard.engine.decisions import LoopGuardInterrupt, RunEndState
from otel_loopguard.engine.run_identity import ROOT, RunIdentity, as_run_key, run_identity
from otel_loopguard.guard.model_turns import (
    enter_run_scope,
    leave_run_scope,
)
from otel_loopguard.guard.run_context import _CURRENT_RUN, RunHandle
from otel_loopguard.guard.span_context import (
    baggage_conversation,
)
from otel_loopguard.telemetry import RUN_STATE_ATTRIBUTE, SCOPE_NAME


class AgentRun:
    """``with guard.agent_run(tracer, name) as run:`` (see :meth:`LoopGuard.agent_run`)."""

    __slots__ = (
        "_attributes",
        "_conversation",
        "_guard",
        "_name",
        "_span",
        "_token",
        "_tracer",
        "handle",
    )

    def __init__(
        self,
        guard: Any,
        tracer: trace.Tracer | None,
        agent_name: str | None,
        conversation_id: str | None,
        attributes: Mapping[str, Any] | None,
    ) -> None:
        self._guard = guard
        self._tracer = tracer
        self._name = agent_name
        self._conversation = conversation_id
        self._attributes = attributes
        self._span: Any = None
        self._token: Any = None
        self.handle: RunHandle | None = None

    def __enter__(self) -> RunHandle:
        guard = self._guard
        tracer = self._tracer or trace.get_tracer(SCOPE_NAME + ".agent")
        attrs: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent"}
        if self._name:
            attrs["gen_ai.agent.name"] = self._name
        if self._conversation:
            attrs["gen_ai.conversation.id"] = self._conversation
        if self._attributes:
            attrs.update(self._attributes)
        name = f"invoke_agent {self._name}" if self._name else "invoke_agent"
        span = tracer.start_span(name, kind=SpanKind.INTERNAL, attributes=attrs)
        self._span = span
        try:
            parent = _CURRENT_RUN.get()
            context = span.get_span_context()
            if context.is_valid:
                guard.managed.add(context.span_id)
            conversation = self._conversation or baggage_conversation()
            if parent is not None and (not conversation or conversation == parent.run_id):
                # nested agents and handoffs stay in the one run
                handle = RunHandle(parent.run_id, parent.keyed_by, self._name, span, False)
            else:
                joined = _foreign_agent_run(guard, span) if not conversation else None
                if joined is not None:
                    # started by the processor with their span (nothing in it yet): it is
                    # this agent's run, named as ours names it
                    identity = joined
                    guard.monitor.end_run(identity.run_id)
                elif context.is_valid:
                    identity = run_identity(
                        format(context.trace_id, "032x"),
                        conversation=conversation,
                        root_span_id=format(context.span_id, "016x"),
                    )
                elif conversation:
                    identity = run_identity("", conversation=conversation)
                else:
                    # no SDK: the span has no ids (all zeros), and every run is its own
                    # run all the same (two agents at once must never share one)
                    identity = RunIdentity(f"run-{uuid.uuid4().hex}", ROOT)
                handle = RunHandle(identity.run_id, identity.keyed_by, self._name, span, True)
                if guard.config.enabled:
                    guard.monitor.start_run(
                        handle.run_id, agent=self._name, keyed_by=identity.keyed_by
                    )
                    if guard.shared_runs is not None:  # resumed elsewhere: its newer state
                        guard.shared_runs.run_started(handle.run_id)
            guard.note_gate(handle.run_id)
            span.set_attribute("loopguard.run.id", handle.run_id)
        except Exception as exc:
            guard.telemetry.internal_error("agent_run.enter", exc)
            handle = RunHandle(f"unknown-{id(self)}", ROOT, self._name, span, False)
        self.handle = handle
        self._token = (
            _CURRENT_RUN.set(handle),
            trace.use_span(span, end_on_exit=False),
            enter_run_scope(),
        )
        self._token[1].__enter__()
        return handle

    def suspend(self) -> None:
        """Detach the entered run from the current context without ending it.

        For runs that outlive one call frame (a stream the caller iterates, a handler the
        caller awaits later): between two steps the caller's context must not keep the run
        current, or a stream dropped halfway would make the caller's next run look nested.
        Call :meth:`resume` before the next step; ``__exit__`` ends a suspended run too.
        """
        token, self._token = self._token, None
        if token is None:
            return
        run_token, use_span, turn_scope = token
        try:
            use_span.__exit__(None, None, None)
        except Exception as error:  # pragma: no cover - context detach trouble
            self._guard.telemetry.internal_error("agent_run.detach", error)
        try:
            _CURRENT_RUN.reset(run_token)
        except ValueError:  # detached in another context (e.g. a generator closed elsewhere)
            _CURRENT_RUN.set(None)
        leave_run_scope(turn_scope)

    def resume(self) -> None:
        """Make a suspended run current again in this context (see :meth:`suspend`)."""
        if self._token is not None or self._span is None:
            return
        use_span = trace.use_span(self._span, end_on_exit=False)
        self._token = (_CURRENT_RUN.set(self.handle), use_span, enter_run_scope())
        use_span.__enter__()

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        guard = self._guard
        span = self._span
        handle = self.handle
        self.suspend()
        try:
            state = self._end_state(exc)
            if exc is not None and not isinstance(exc, LoopGuardInterrupt):
                if isinstance(exc, Exception):
                    span.record_exception(exc)
                span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
                span.set_attribute("error.type", type(exc).__qualname__)
            elif isinstance(exc, LoopGuardInterrupt):
                span.set_attribute("error.type", "LoopGuardInterrupt")
                span.set_status(Status(StatusCode.ERROR, str(exc)))
                guard.telemetry.mark_span(span, exc.decision)  # the STOP, filterable here too
            span.set_attribute(RUN_STATE_ATTRIBUTE, state.value)
            if handle is not None and handle.outermost and guard.config.enabled:
                if guard.shared_runs is not None:  # the turn's counts (and state), shared
                    guard.shared_runs.turn_ended(
                        handle.run_id, save=as_run_key(handle.keyed_by).ends_when_idle
                    )
                if not as_run_key(handle.keyed_by).ends_when_idle:
                    summary = guard.monitor.end_run(handle.run_id, state)
                    guard.deliveries.run_ended(handle.run_id)
                else:
                    summary = guard.monitor.run_snapshot(handle.run_id)
                _set_usage(span, summary)
                guard.telemetry.record_run_end(state, trace.set_span_in_context(span))
        except Exception as error:
            guard.telemetry.internal_error("agent_run.exit", error)
        finally:
            span.end()
            guard.managed.discard(span.get_span_context().span_id)

    def _end_state(self, exc: BaseException | None) -> RunEndState:
        handle = self.handle
        override = handle.state if handle is not None else None
        summary = None
        if override is None and exc is None and handle is not None and self._guard.config.enabled:
            summary = self._guard.monitor.run_snapshot(handle.run_id)
        return self._guard.run_end_state(summary, exception=exc, override=override)  # type: ignore[no-any-return]


def _foreign_agent_run(guard: Any, span: Any) -> RunIdentity | None:
    """The run of another instrumentation's agent span of this same invocation, when ours
    starts directly inside it as the only agent open in the trace (OpenInference's
    smolagents ``<Agent>.run`` span around our ``invoke_agent``): one invocation is one run,
    and ours ends it (the processor no longer ends it when their span ends, which their
    wrapper may never do after our interrupt)."""
    parent = getattr(span, "parent", None)
    if parent is None or parent.is_remote:
        return None
    state = guard.follower.get(parent.trace_id)
    if state is None:
        return None
    agents = state.agents
    if not agents:
        return None
    outer = agents[0]
    own = span.get_span_context().span_id
    if outer.managed or outer.span_id != parent.span_id:
        return None
    if any(agent.span_id != own for agent in agents[1:]):
        return None
    outer.managed = True  # its run is ours now (processor: _end_agent_run)
    return state.identity(state.conversation, outer, lambda span_id: format(span_id, "016x"))


def _set_usage(span: Any, summary: Any) -> None:
    """The run's token totals on its agent span (GenAI ``gen_ai.usage.*``), when known."""
    counters = getattr(summary, "counters", None)
    if counters is None or not (counters.input_tokens or counters.output_tokens):
        return
    span.set_attribute("gen_ai.usage.input_tokens", counters.input_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", counters.output_tokens)
