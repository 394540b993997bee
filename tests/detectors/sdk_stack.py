"""A real OpenTelemetry SDK pipeline with the loopguard processor, for span-level tests.

Detectors are unit-tested on events; these tests check that what users run (GenAI spans
from any instrumentation -> ``LoopGuardSpanProcessor``) reaches them and that their
decisions come back out as span events and run states.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode
from otel.helpers import make_stack


@dataclass
class SdkStack:
    provider: TracerProvider
    exporter: InMemorySpanExporter
    tracer: Any

    def decisions(self) -> list[dict[str, Any]]:
        """Attributes of every ``loopguard.decision`` span event, in the order spans ended."""
        return [
            dict(event.attributes or {})
            for span in self.exporter.get_finished_spans()
            for event in span.events
            if event.name == "loopguard.decision"
        ]

    def spans(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if s.name == name]


def sdk_stack(**config: Any) -> SdkStack:
    stack = make_stack(**config)
    return SdkStack(stack.provider, stack.exporter, stack.provider.get_tracer("tests.detectors"))


AGENT = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "writer"}


def chat_span(
    stack: SdkStack,
    finish: str,
    *,
    input_tokens: int = 0,
    output_tokens: int = 0,
    output_messages: str | None = None,
) -> None:
    """One GenAI semantic-conventions ``chat`` span, ended at once."""
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.response.finish_reasons": (finish,),
        "gen_ai.usage.input_tokens": input_tokens,
        "gen_ai.usage.output_tokens": output_tokens,
    }
    if output_messages is not None:  # content capture on in the instrumentation
        attributes["gen_ai.output.messages"] = output_messages
    with stack.tracer.start_as_current_span("chat gpt-4o", attributes=attributes):
        pass


def tool_span(
    stack: SdkStack, tool: str, arguments: str, result: str, *, error_type: str | None = None
) -> None:
    """One GenAI semantic-conventions ``execute_tool`` span with its (opted-in) content;
    with ``error_type`` it failed (``error.type`` and an ERROR status, as semconv says)."""
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool,
        "gen_ai.tool.call.arguments": arguments,
        "gen_ai.tool.call.result": result,
    }
    if error_type:
        attributes["error.type"] = error_type
    with stack.tracer.start_as_current_span(f"execute_tool {tool}", attributes=attributes) as span:
        if error_type:
            span.set_status(Status(StatusCode.ERROR, result))
