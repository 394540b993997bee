"""An agent run recorded as spans of one dialect (OTel GenAI semconv or OpenInference),
through the real SDK and the real span processor; each call returns the strongest action
decided on that span (``continue`` when none), as a user of the processor would see it.

Used by the tests of failures that cannot clear within the run and of failure markers in
tool output (issue 28, families 4 and 6).
"""

from __future__ import annotations

import json
from typing import Any

from opentelemetry import trace
from otel.helpers import make_stack

from otel_loopguard.engine.decisions import Decision
from otel_loopguard.engine.events import Event

DIALECTS = ["genai", "openinference"]
_ORDER = ["continue", "warn", "replan", "pause", "stop"]


class Failed(Exception):
    """What a tool or a model client raised; the instrumentation records it on the span."""


class SpanAgent:
    def __init__(self, dialect: str, **config: Any) -> None:
        self.dialect = dialect
        self.stack = make_stack(**config)
        self.tracer = self.stack.tracer
        self.decisions: list[tuple[Decision, Event]] = []
        self._seen = 0
        self.stack.guard.monitor.add_decision_listener(
            lambda decision, event: self.decisions.append((decision, event))
        )
        attributes = (
            {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper"}
            if dialect == "genai"
            else {"openinference.span.kind": "AGENT", "agent.name": "helper"}
        )
        self.root = self.tracer.start_span("invoke_agent helper", attributes=attributes)
        self.context = trace.set_span_in_context(self.root)

    # -- what was decided

    def _decided(self) -> str:
        new, self._seen = self.decisions[self._seen :], len(self.decisions)
        return max((d.action.value for d, _ in new), key=_ORDER.index, default="continue")

    def last(self) -> Decision:
        return self.decisions[-1][0]

    def deliver(self, detector: str) -> None:
        """A framework package delivered ``detector``'s recommendation (enforce mode)."""
        (run,) = {event.run_id for _, event in self.decisions}
        self.stack.guard.monitor.note_delivered(run, detector)

    # -- spans

    def _span(self, name: str, attributes: dict[str, Any], error: str | None = None) -> str:
        try:
            with self.tracer.start_as_current_span(name, context=self.context) as span:
                span.set_attributes(attributes)
                if error is not None:
                    raise Failed(error)
        except Failed:
            pass  # the SDK recorded the exception, set the status and ended the span
        return self._decided()

    def chat(self, text: str = "", calls: list[tuple[str, dict]] | None = None) -> str:
        """A model turn answering ``text`` and asking for ``calls``; with neither it is an
        empty end of turn (an assistant message with no parts / no content)."""
        calls = calls or []
        if self.dialect == "genai":
            parts: list[dict[str, Any]] = [{"type": "text", "content": text}] if text else []
            parts += [
                {"type": "tool_call", "name": name, "arguments": arguments}
                for name, arguments in calls
            ]
            attributes: dict[str, Any] = {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.response.finish_reasons": ("tool_calls" if calls else "stop",),
                "gen_ai.usage.output_tokens": 10 if (text or calls) else 0,
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": parts, "finish_reason": "stop"}]
                ),
            }
        else:
            attributes = {
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": text,
            }
            for j, (name, arguments) in enumerate(calls):
                prefix = f"llm.output_messages.0.message.tool_calls.{j}.tool_call.function."
                attributes[prefix + "name"] = name
                attributes[prefix + "arguments"] = json.dumps(arguments)
        return self._span("chat gpt-4o", attributes)

    def failed_model_call(self, message: str) -> str:
        """A model call that raised (the provider refused it): status ERROR, the exception."""
        if self.dialect == "genai":
            attributes: dict[str, Any] = {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
            }
        else:
            attributes = {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o"}
        return self._span("chat gpt-4o", attributes, error=message)

    def _tool_attributes(self, name: str, arguments: dict, result: str | None) -> dict[str, Any]:
        if self.dialect == "genai":
            attributes = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.arguments": json.dumps(arguments),
            }
            if result is not None:
                attributes["gen_ai.tool.call.result"] = result
        else:
            attributes = {
                "openinference.span.kind": "TOOL",
                "tool.name": name,
                "input.value": json.dumps(arguments),
            }
            if result is not None:
                attributes["output.value"] = result
        return attributes

    def tool(self, name: str, arguments: dict, result: str) -> str:
        """A model turn asking for the call, then the tool span that answered ``result``."""
        asked = self.chat(calls=[(name, arguments)])
        done = self._span(f"execute_tool {name}", self._tool_attributes(name, arguments, result))
        return max(asked, done, key=_ORDER.index)

    def failing_tool(self, name: str, arguments: dict, message: str) -> str:
        """A model turn asking for the call, then the tool span that failed with ``message``."""
        asked = self.chat(calls=[(name, arguments)])
        attributes = self._tool_attributes(name, arguments, None)
        done = self._span(f"execute_tool {name}", attributes, error=message)
        return max(asked, done, key=_ORDER.index)
