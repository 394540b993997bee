"""A hand-written agent loop over an OpenAI-shaped chat API, and what the chat-loop suites
(openai, litellm) check alike, each on its own package's spans."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from .harness import Harness

#: the two tools the hand-written loop offers the model (free-form arguments)
CHAT_TOOL_SCHEMAS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": name,
            "parameters": {"type": "object", "properties": {}, "additionalProperties": True},
        },
    }
    for name in ("search", "fetch")
]


@dataclass
class ChatLoopOutcome:
    answer: str | None = None
    turns: int = 0
    injected: list[str] = field(default_factory=list)


def run_chat_tool_loop(
    complete: Callable[[list[dict[str, Any]]], Any],
    tracer: Any,
    tools: dict[str, Callable[..., Any]],
    *,
    max_turns: int = 8,
    conversation_id: str | None = None,
) -> ChatLoopOutcome:
    """The agent loop an application writes over any OpenAI-shaped chat API (the OpenAI SDK,
    ``litellm.completion``): ``complete(messages)`` sends the conversation (with
    :data:`CHAT_TOOL_SCHEMAS`) and returns the chat completion. With ``conversation_id`` the
    run is that conversation's (it outlives the agent span: its counts can be read after).

    It marks its run with ``guard.agent_run`` and each tool execution with
    ``guard.tool_call`` (reporting the tool's result); the model calls are seen by the
    instrumentation under test alone. Where the plugin does not deliver replans itself
    (``observe`` mode, or ``OTEL_LOOPGUARD_DELIVER_RECOMMENDATIONS=false``) it follows them
    the way docs/python-api.md shows for such agents: ``guard.on_decision`` hands the
    decision to the loop, which sends ``decision.recommendation`` as the next user message;
    in ``enforce`` mode with delivery on, the model SDK package delivers it (sending it here
    too would send it twice).
    """
    from otel_loopguard.engine.decisions import Action, Decision
    from otel_loopguard.guard import get_guard

    guard = get_guard()
    follows_replans = not (guard.enforcing and guard.config.deliver_recommendations)
    outcome = ChatLoopOutcome()
    pending: list[Decision] = []
    guard.on_decision(lambda decision, _event: pending.append(decision))
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Find the pricing page."}]
    with guard.agent_run(tracer, "assistant", conversation_id):
        while outcome.turns < max_turns:
            outcome.turns += 1
            pending.clear()
            message = complete(messages).choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            replans = [d for d in pending if d.action is Action.REPLAN and d.recommendation]
            if replans and follows_replans:
                outcome.injected.append(replans[-1].recommendation or "")
                messages.append({"role": "user", "content": replans[-1].recommendation})
                continue
            if not message.tool_calls:
                outcome.answer = message.content
                return outcome
            for call in message.tool_calls:
                arguments = json.loads(call.function.arguments or "{}")
                output = _execute_tool(guard, tracer, tools, call.function.name, arguments, call.id)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
    return outcome


def _execute_tool(
    guard: Any,
    tracer: Any,
    tools: dict[str, Callable[..., Any]],
    name: str,
    arguments: dict[str, Any],
    call_id: str,
) -> str:
    try:
        with guard.tool_call(tracer, name, arguments, call_id=call_id) as call:
            result = tools[name](**arguments)
            call.set_result(result)
        return str(result)
    except Exception as exc:  # the model sees the error, as in most agent loops
        return f"error: {exc}"


def assert_genai_chat_span(
    span: ReadableSpan,
    *,
    provider: str,
    response_id: str = "chatcmpl-1",
    finish_reasons: tuple[str, ...] = ("tool_calls",),
    usage: tuple[int, int] = (12, 7),
) -> None:
    """A ``chat`` CLIENT span of the scripted API's model ``gpt-test`` per the GenAI
    semantic conventions: request and response model, response id, finish reasons, usage."""
    from opentelemetry.trace import SpanKind

    assert span.kind is SpanKind.CLIENT
    attrs = span.attributes or {}
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.provider.name"] == provider
    assert attrs["gen_ai.request.model"] == "gpt-test"
    assert attrs["gen_ai.response.model"] == "gpt-test"
    assert attrs["gen_ai.response.id"] == response_id
    assert attrs["gen_ai.response.finish_reasons"] == finish_reasons
    assert (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"]) == usage


def assert_run_totals(harness: Harness, usage: list[tuple[int, int]], state: str) -> None:
    """The run's ``invoke_agent`` span: the sum of the answers' usage, and how it ended."""
    (agent,) = harness.spans("invoke_agent")
    attrs = agent.attributes or {}
    assert attrs["gen_ai.usage.input_tokens"] == sum(i for i, _ in usage)
    assert attrs["gen_ai.usage.output_tokens"] == sum(o for _, o in usage)
    assert attrs["loopguard.run.state"] == state


def assert_vetoed_by_the_token_budget(
    harness: Harness, stopped: Any, usage: list[tuple[int, int]]
) -> None:
    """A token budget stopped the run before a request was sent: the interrupt names the
    budget, the run ended ``budget_exceeded`` with the usage of the answers it got, and the
    last ``chat`` span is the vetoed request's (``error.type``, no answer)."""
    assert stopped.value.decision.detectors == ("budget",)
    assert_run_totals(harness, usage, "budget_exceeded")
    vetoed = harness.spans("chat ")[-1]
    assert (vetoed.attributes or {})["error.type"] == "LoopGuardInterrupt"
    assert "gen_ai.response.id" not in (vetoed.attributes or {})


def assert_third_request_vetoed_by_the_budget(harness: Harness, api: Any, stopped: Any) -> None:
    """The agent loop on :func:`~.scripted_openai.budget_turns` under a 45-token budget
    (``max_tokens=8``): two turns used 40 tokens, the third may spend 8 more (48 > 45), so
    it was never sent (``api.requests``): vetoed by the budget; every span ended once."""
    assert len(api.requests) == 2
    assert_vetoed_by_the_token_budget(harness, stopped, usage=[(15, 5), (15, 5)])
    harness.assert_every_span_ended_once()


def close_a_stream_early(harness: Harness, tracer: Any, open_stream: Callable[[], Any]) -> None:
    """In a run, ``open_stream()`` (a streamed chat completion), one chunk read, then closed,
    twice (closing twice is harmless): its ``chat`` span ended once, without an error, and
    the unfinished answer was not judged."""
    with harness.guard.agent_run(tracer, "writer"):
        stream = open_stream()
        next(iter(stream))
        stream.close()
        stream.close()  # closing twice is harmless
    (chat,) = harness.spans("chat ")
    assert "error.type" not in chat.attributes
    assert harness.decided == []  # an unfinished answer is not judged
    assert harness.open_spans() == []
    harness.assert_every_span_ended_once()


def assert_truncated_streams_replanned_then_stopped(
    harness: Harness, api: Any, stopped: Any, output_tokens: int
) -> None:
    """Streamed answers cut at their output limit, one recovery allowed: the first was
    judged at its end and answered by a REPLAN, the second by the truncation STOP that
    ended the reading loop, so only two requests were sent (``api.requests``); the second
    ``chat`` span carries its finish reason and usage (``output_tokens``); every span
    ended once."""
    assert "truncation" in stopped.value.decision.detectors
    assert len(api.requests) == 2  # replan after the first, STOP at the end of the second
    chats = harness.spans("chat ")
    assert len(chats) == 2
    assert chats[1].attributes["gen_ai.response.finish_reasons"] == ("length",)
    assert chats[1].attributes["gen_ai.usage.output_tokens"] == output_tokens
    assert [e["loopguard.action"] for e in harness.decisions_on(chats[0])] == ["replan"]
    assert [e["loopguard.action"] for e in harness.decisions_on(chats[1])] == ["stop"]
    assert harness.open_spans() == []
    harness.assert_every_span_ended_once()
