"""What framework packages import (beside the public face, :mod:`otel_loopguard`).

The pieces every instrumentation package of an agent framework needs, written once: the
gated tool wrapper (:mod:`.tool_gate`), the model-turn wrapper (:mod:`.model_turn`), the
agent-run wrapper (:mod:`.agent_runs`), all three for plain and coroutine methods alike
(:mod:`.scoped_call`); run-over-stream helpers (:mod:`.run_streams`), held-back interrupts
(:mod:`.held_back`), the instrumentor declared by its hooks (:mod:`.instrumentor`), the
model-call span, the streamed answer and the OpenAI wire format; delivering a replan's
recommendation into the run's next model request (:mod:`.recommendations`);
and the few core names a package needs beyond the public face (the open model turn, how
spans are classified and read, the conversation id of a framework's attributes).

A package imports only ``otel_loopguard`` and ``otel_loopguard.kit`` (or its modules). The
names here are loaded on first use, so importing one kit module loads no other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from otel_loopguard.lazy_names import lazy_names

if TYPE_CHECKING:  # pragma: no cover
    from otel_loopguard.guard.model_turns import ModelTurn
    from otel_loopguard.guard.run_context import RunHandle, current_run
    from otel_loopguard.kit.agent_runs import agent_run_wrapper
    from otel_loopguard.kit.conversation import conversation_in
    from otel_loopguard.kit.held_back import HeldInterrupts, exception_flavour, interrupt_again
    from otel_loopguard.kit.instrumentor import FrameworkInstrumentor, Hook, hooks_of
    from otel_loopguard.kit.model_turn import (
        ModelCall,
        in_a_run,
        model_turn_scope,
        model_turn_wrapper,
        reasking_wrapper,
        report_turn,
    )
    from otel_loopguard.kit.recommendations import (
        Again,
        Deliver,
        Join,
        combined_answer,
        deliver_waiting,
        waiting_detector,
    )
    from otel_loopguard.kit.run_streams import Steps, drive, events_in_run, run_over
    from otel_loopguard.kit.scoped_call import PlainScope, Scope, Wrapper, is_async, scoped_wrapper
    from otel_loopguard.kit.streamed_turns import model_turn_stream
    from otel_loopguard.kit.tool_gate import (
        CHECK_AROUND,
        CHECK_BEFORE,
        CheckOnly,
        GatedCall,
        function_tool_attributes,
        json_arguments,
        record_outcome,
        report_result,
        tool_gate_wrapper,
    )
    from otel_loopguard.spans.classify import SpanClass, classify_parts
    from otel_loopguard.spans.view import span_attributes

#: module -> the names it gives
_LAZY = {
    # written for framework packages
    "otel_loopguard.kit.agent_runs": ("agent_run_wrapper",),
    "otel_loopguard.kit.conversation": ("conversation_in",),
    "otel_loopguard.kit.instrumentor": ("FrameworkInstrumentor", "Hook", "hooks_of"),
    "otel_loopguard.kit.held_back": ("HeldInterrupts", "exception_flavour", "interrupt_again"),
    "otel_loopguard.kit.model_turn": (
        "ModelCall",
        "in_a_run",
        "model_turn_scope",
        "model_turn_wrapper",
        "reasking_wrapper",
        "report_turn",
    ),
    "otel_loopguard.kit.recommendations": (
        "Again",
        "Deliver",
        "Join",
        "combined_answer",
        "deliver_waiting",
        "waiting_detector",
    ),
    "otel_loopguard.kit.run_streams": ("Steps", "drive", "events_in_run", "run_over"),
    "otel_loopguard.kit.streamed_turns": ("model_turn_stream",),
    "otel_loopguard.kit.scoped_call": (
        "PlainScope",
        "Scope",
        "Wrapper",
        "is_async",
        "scoped_wrapper",
    ),
    "otel_loopguard.kit.tool_gate": (
        "CHECK_AROUND",
        "CHECK_BEFORE",
        "CheckOnly",
        "GatedCall",
        "function_tool_attributes",
        "json_arguments",
        "record_outcome",
        "report_result",
        "tool_gate_wrapper",
    ),
    # the core's, re-exported: what packages need beyond the public face
    "otel_loopguard.guard.run_context": ("RunHandle", "current_run"),
    "otel_loopguard.guard.model_turns": ("ModelTurn",),
    "otel_loopguard.spans.classify": ("SpanClass", "classify_parts"),
    "otel_loopguard.spans.view": ("span_attributes",),
}


__getattr__ = lazy_names(__name__, _LAZY, globals())


__all__ = [
    "CHECK_AROUND",
    "CHECK_BEFORE",
    "Again",
    "CheckOnly",
    "Deliver",
    "FrameworkInstrumentor",
    "GatedCall",
    "HeldInterrupts",
    "Hook",
    "Join",
    "ModelCall",
    "ModelTurn",
    "PlainScope",
    "RunHandle",
    "Scope",
    "SpanClass",
    "Steps",
    "Wrapper",
    "agent_run_wrapper",
    "classify_parts",
    "combined_answer",
    "conversation_in",
    "current_run",
    "deliver_waiting",
    "drive",
    "events_in_run",
    "exception_flavour",
    "function_tool_attributes",
    "hooks_of",
    "in_a_run",
    "interrupt_again",
    "is_async",
    "json_arguments",
    "model_turn_scope",
    "model_turn_stream",
    "model_turn_wrapper",
    "reasking_wrapper",
    "record_outcome",
    "report_result",
    "report_turn",
    "run_over",
    "scoped_wrapper",
    "span_attributes",
    "tool_gate_wrapper",
    "waiting_detector",
]
