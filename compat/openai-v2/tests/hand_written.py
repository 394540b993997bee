"""A hand-written agent loop over the OpenAI SDK whose tools are plain application code:
the official instrumentation's ``chat`` spans are all there is to see (no tool span)."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from otel_loopguard_testing import CHAT_TOOL_SCHEMAS
from otel_loopguard_testing.scripted_openai import ScriptedAPI, Turn

LOOP_TURNS = 8
QUERIES = ("pricing page", "/pricing", "team plan price", "currency")
ANSWER = "The team plan costs 10 EUR per seat."


@dataclass
class Loop:
    api: ScriptedAPI
    tool: Callable[[str], str]
    executions: list[str] = field(default_factory=list)
    answer: str | None = None

    def run(self, max_turns: int = LOOP_TURNS + 1) -> str | None:
        """The application's loop: ask, run the tools asked for, send their results back."""
        client = self.api.client()
        messages: list[dict[str, Any]] = [{"role": "user", "content": "What does it cost?"}]
        for _ in range(max_turns):
            completion = client.chat.completions.create(
                model="gpt-test", messages=messages, tools=CHAT_TOOL_SCHEMAS
            )
            message = completion.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                self.answer = message.content
                return self.answer
            for call in message.tool_calls:
                query = json.loads(call.function.arguments or "{}").get("query", "")
                self.executions.append(query)
                output = self.tool(query)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
        return None


def looping(usage: tuple[int, int] = (10, 5)) -> Loop:
    """The same ``search(query="pricing")`` turn after turn, always "no results"."""
    turns = [
        Turn(
            tool_calls=[("search", {"query": "pricing"})],
            input_tokens=usage[0],
            output_tokens=usage[1],
        )
        for _ in range(LOOP_TURNS)
    ]
    return Loop(ScriptedAPI([*turns, Turn(text="I gave up.")]), lambda query: "no results")


def looping_in_a_run(harness: Any) -> Callable[[], tuple[Callable[[], Any], Callable[[], int]]]:
    """For ``assert_interrupted_in_each_invocation``: a fresh looping loop inside
    ``agent_run`` (the application marks its run), and its executions."""
    from otel_loopguard.guard import get_guard

    def start() -> tuple[Callable[[], Any], Callable[[], int]]:
        loop = looping()

        def run() -> None:
            with get_guard().agent_run(harness.app_tracer(), "assistant"):
                loop.run()

        return run, lambda: len(loop.executions)

    return start


def productive(usage: tuple[int, int] = (40, 10)) -> Loop:
    """Distinct searches with changing results, then the answer: five turns of ``usage``."""
    turns = [
        Turn(
            tool_calls=[("search", {"query": query})], input_tokens=usage[0], output_tokens=usage[1]
        )
        for query in QUERIES
    ]
    turns.append(Turn(text=ANSWER, input_tokens=usage[0], output_tokens=usage[1]))
    return Loop(ScriptedAPI(turns), lambda query: f"results for {query}")


CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


@contextlib.contextmanager
def content_capture(harness: Any, on: bool) -> Iterator[None]:
    """Their content capture on or off for the block: theirs reads its variable when it
    instruments, so it is instrumented again (and again after the block, with it on)."""
    harness.uninstrument()
    os.environ[CAPTURE] = "SPAN_ONLY" if on else "NO_CONTENT"
    harness.reinstrument()
    try:
        yield
    finally:
        harness.uninstrument()
        os.environ[CAPTURE] = "SPAN_ONLY"
        harness.reinstrument()
