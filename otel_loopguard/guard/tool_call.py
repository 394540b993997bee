"""``guard.tool_call(...)``: the gate around one tool execution (pre-call veto, outcome,
the decision on the still-open span, the interrupt after it ended)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from otel_loopguard.engine.decisions import Action, Decision, LoopGuardInterrupt
from otel_loopguard.engine.events import (
    ErrorInfo,
    Event,
    tool_call,
    tool_error,
    tool_result,
)
from otel_loopguard.engine.run_identity import RunIdentity
from otel_loopguard.guard.model_turns import (
    enter_run_scope,
    leave_run_scope,
)
from otel_loopguard.guard.run_context import _CURRENT_RUN
from otel_loopguard.guard.span_context import (
    content_attribute,
    origin,
    status_code,
)
from otel_loopguard.spans.classify import handoff_target
from otel_loopguard.spans.events import (
    CALL_NEAR_KEY_ATTRIBUTE,
    CALL_SIGNATURE_ATTRIBUTE,
    RESULT_NEAR_KEY_ATTRIBUTE,
    RESULT_SIGNATURE_ATTRIBUTE,
    delegation_event,
    delegation_tools,
    handoff_event,
)
from otel_loopguard.telemetry import SCOPE_NAME


class ToolCall:
    """``with guard.tool_call(tracer, name, args) as call:`` (see :meth:`LoopGuard.tool_call`)."""

    __slots__ = (
        "_agent",
        "_arguments",
        "_attributes",
        "_call_event",
        "_call_id",
        "_error",
        "_guard",
        "_has_result",
        "_identity",
        "_name",
        "_result",
        "_span",
        "_started",
        "_tracer",
        "_turn_scope",
        "_use_span",
        "decision",
    )

    def __init__(
        self,
        guard: Any,
        tracer: trace.Tracer | None,
        tool_name: str,
        arguments: Any,
        call_id: str | None,
        agent_name: str | None,
        attributes: Mapping[str, Any] | None,
    ) -> None:
        self._guard = guard
        self._tracer = tracer
        self._name = tool_name
        self._arguments = arguments
        self._call_id = call_id
        self._agent = agent_name
        self._attributes = attributes
        self._span: Any = None
        self._use_span: Any = None
        self._turn_scope: Any = None
        self._identity: RunIdentity | None = None
        self._call_event: Event | None = None
        self._result: Any = None
        self._has_result = False
        self._error: ErrorInfo | None = None
        self._started = 0.0
        self.decision: Decision = Decision(Action.CONTINUE)

    # what the wrapped code sees
    def set_result(self, result: Any) -> None:
        """Record the tool's output (otherwise the result is unknown, or the exception)."""
        self._result = result
        self._has_result = True

    def set_error(
        self, error_type: str, message: str | None = None, status_code: int | None = None
    ) -> None:
        """Record a failure that the framework returns as a value instead of raising it
        (an MCP result with ``is_error``, an SDK's error text handed to the model): the span
        gets ``error.type`` and an error status, the monitor a ``tool_error`` event.

        Also when an exception passes: a framework that wraps the tool's own error in its
        own (smolagents' ``AgentToolExecutionError`` "... Please try again") hides what the
        failure detectors classify; the recorded error wins over the passing exception."""
        self._error = ErrorInfo(type=error_type, message=message, status_code=status_code)

    @property
    def span(self) -> Any:
        return self._span

    @property
    def run_id(self) -> str | None:
        return self._identity.run_id if self._identity is not None else None

    def __enter__(self) -> ToolCall:
        guard = self._guard
        self._started = time.perf_counter()
        tracer = self._tracer or trace.get_tracer(SCOPE_NAME + ".tool")
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": self._name,
        }
        if self._call_id:
            attrs["gen_ai.tool.call.id"] = self._call_id
        if self._attributes:
            attrs.update(self._attributes)
        config = guard.config
        if config.capture_content and self._arguments is not None:
            attrs["gen_ai.tool.call.arguments"] = content_attribute(self._arguments)
        # a shared store's round trip overlaps the span's making (None: nothing shared)
        early = guard.preflight_before_span("tool_call") if guard.shared_runs is not None else None
        span = tracer.start_span(
            f"execute_tool {self._name}", kind=SpanKind.INTERNAL, attributes=attrs
        )
        self._span = span
        self._use_span = trace.use_span(span, end_on_exit=False)
        self._use_span.__enter__()
        # a tool is no part of a model turn still open around it (a streamed answer whose
        # tools run while it is read): a model call inside the tool is its own turn
        self._turn_scope = enter_run_scope()
        if not config.enabled:
            return self
        veto: Decision | None = None
        try:
            context = span.get_span_context()
            if context.is_valid:
                guard.managed.add(context.span_id, gate_tool=True)
                # another instrumentation's span of this execution is not fed again,
                # whichever parent it has (spans.executions)
                guard.follower.execution_started(
                    context.trace_id,
                    context.span_id,
                    "tool",
                    self._name,
                    self._call_id,
                    getattr(span, "start_time", None) or time.time_ns(),
                )
            identity = guard.resolve_run(span)
            self._identity = identity
            guard.note_gate(identity.run_id)
            handle = _CURRENT_RUN.get()
            agent = self._agent or (handle.agent if handle is not None else None)
            if agent is None:
                state = guard.follower.get(context.trace_id)
                inner = state.innermost_agent() if state is not None else None
                agent = inner.name if inner is not None else None
            self._agent = agent
            if agent and "gen_ai.agent.name" not in attrs:
                span.set_attribute("gen_ai.agent.name", agent)  # who called it, for replay
            preflight, fresh = guard.preflight(identity.run_id, "tool_call", begun=early)
            if fresh:
                guard._export_to(span, preflight, None)
            if preflight.action is Action.STOP:
                self.decision = preflight
                if guard.enforcing:
                    veto = preflight
            if veto is None:
                # observed before the tool runs: the Nth identical call is stopped unexecuted
                event = tool_call(
                    identity.run_id,
                    self._name,
                    self._arguments,
                    actor=agent,
                    call_id=self._call_id,
                    max_chars=config.signature_max_chars,
                    **origin(context),
                )
                self._call_event = event
                if config.export_signatures:
                    span.set_attribute(CALL_SIGNATURE_ATTRIBUTE, event.signature)
                    span.set_attribute(CALL_NEAR_KEY_ATTRIBUTE, event.near_key)
                decision, fresh = guard.observe(event)
                if decision.action >= self.decision.action:
                    self.decision = decision
                if fresh:
                    guard._export_to(span, decision, event)
                if decision.action is Action.STOP and guard.enforcing:
                    veto = decision
        except Exception as exc:
            guard.telemetry.internal_error("tool_call.enter", exc)
            return self
        if veto is not None:
            self._veto(veto)
        return self

    def _veto(self, decision: Decision) -> None:
        """The pre-call veto: the tool never runs; the span ends as an interrupted call."""
        guard = self._guard
        span = self._span
        try:
            span.set_attribute("error.type", "LoopGuardInterrupt")
            span.set_status(Status(StatusCode.ERROR, "vetoed by otel-loopguard"))
            guard.note_interrupt(
                decision,
                trace.set_span_in_context(span),
                tool=self._name,
                agent=self._agent,
                saved=f"this {self._name} call and every later call of this run (vetoed "
                "before they run)",
            )
        except Exception as exc:
            guard.telemetry.internal_error("tool_call.veto", exc)
        finally:
            self._finish()
        raise LoopGuardInterrupt(decision)

    def _finish(self) -> None:
        try:
            self._use_span.__exit__(None, None, None)
        except Exception as exc:  # pragma: no cover
            self._guard.telemetry.internal_error("tool_call.detach", exc)
        leave_run_scope(self._turn_scope)
        self._span.end()
        context = self._span.get_span_context()
        span_id = context.span_id
        self._guard.managed.discard(span_id)
        try:
            end = getattr(self._span, "end_time", None) or time.time_ns()
            self._guard.follower.execution_ended(context.trace_id, span_id, end)
        except Exception as exc:  # pragma: no cover
            self._guard.telemetry.internal_error("tool_call.execution", exc)
        try:
            self._guard.telemetry.record_processing(
                time.perf_counter() - self._started, "tool_gate"
            )
        except Exception as exc:  # pragma: no cover
            self._guard.telemetry.internal_error("tool_call.metrics", exc)

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        guard = self._guard
        span = self._span
        config = guard.config
        decision = self.decision
        try:
            interrupted = isinstance(exc, (LoopGuardInterrupt, GeneratorExit))
            if exc is not None and isinstance(exc, Exception):
                span.record_exception(exc)
            if self._error is not None and not interrupted:
                span.set_status(Status(StatusCode.ERROR, self._error.message))
                span.set_attribute("error.type", self._error.type or "tool_error")
            elif exc is not None:
                span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
                span.set_attribute("error.type", type(exc).__qualname__)
            elif config.capture_content and self._has_result:
                span.set_attribute("gen_ai.tool.call.result", content_attribute(self._result))
            if (
                config.enabled
                and self._identity is not None
                and self._call_event is not None
                and not isinstance(exc, (LoopGuardInterrupt, GeneratorExit))
            ):
                decision = self._observe_outcome(exc)
        except Exception as error:
            guard.telemetry.internal_error("tool_call.exit", error)
        finally:
            self._finish()
        if (
            guard.enforcing
            and decision.action is Action.STOP
            and not isinstance(exc, LoopGuardInterrupt)
        ):
            try:
                guard.note_interrupt(
                    decision,
                    trace.set_span_in_context(span),
                    tool=self._name,
                    agent=self._agent,
                    saved="every later call of this run (interrupted right after this "
                    f"{self._name} call returned)",
                )
            except Exception as error:  # pragma: no cover
                guard.telemetry.internal_error("tool_call.interrupt", error)
            raise LoopGuardInterrupt(decision) from exc

    def _observe_outcome(self, exc: BaseException | None) -> Decision:
        guard = self._guard
        identity = self._identity
        assert identity is not None
        context = self._span.get_span_context()
        max_chars = guard.config.signature_max_chars
        where = origin(context)
        if self._error is not None:
            event = tool_error(
                identity.run_id,
                self._name,
                self._error,
                actor=self._agent,
                call_id=self._call_id,
                max_chars=max_chars,
                **where,
            )
        elif exc is not None:
            message = None
            try:
                message = str(exc)
            except Exception:  # a hostile __str__
                message = None
            event = tool_error(
                identity.run_id,
                self._name,
                ErrorInfo(
                    type=type(exc).__qualname__,
                    message=message,
                    status_code=status_code(exc),
                ),
                actor=self._agent,
                call_id=self._call_id,
                max_chars=max_chars,
                **where,
            )
        else:
            event = tool_result(
                identity.run_id,
                self._name,
                self._result if self._has_result else None,
                actor=self._agent,
                call_id=self._call_id,
                max_chars=max_chars,
                **where,
            )
        if exc is None and guard.config.export_signatures:
            self._span.set_attribute(RESULT_SIGNATURE_ATTRIBUTE, event.signature)
            self._span.set_attribute(RESULT_NEAR_KEY_ATTRIBUTE, event.near_key)
        events = [event]
        target = handoff_target(self._name) if exc is None else None
        if target is not None:  # a transfer_to_<agent> tool that returned: the handoff happened
            events.append(
                handoff_event(
                    identity.run_id, self._agent, target, self._call_id, self._name, **where
                )
            )
        elif self._call_event is not None and delegation_tools(guard.config)[self._name]:
            # a delegation tool (OTEL_LOOPGUARD_DELEGATION_TOOLS): the coworker's answer came
            # back, fed as a delegation handoff with the answer's signature
            delegation = delegation_event(self._call_event, event)
            if delegation is not None:
                events.append(delegation)
        for observed in events:
            decision, fresh = guard.observe(observed)
            if fresh:
                guard._export_to(self._span, decision, observed)
            if decision.action >= self.decision.action:
                self.decision = decision
        return self.decision
