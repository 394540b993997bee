"""Delivered recommendations in real pydantic-ai runs: a replan's message reaches the model's
next request once, as a ``UserPromptPart`` after the tool results; a model that listens
finishes, one that ignores it is stopped; observe mode sends every request as it was.

``FunctionModel`` records the messages of every request it receives (plain or streamed),
so the tests read what the model really got, not our spans.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.usage import RequestUsage

from otel_loopguard import LoopGuardInterrupt

NUDGE = "Act on what you found"
CONTINUE = "cut off at the output token limit"
REPROMPT = "You ended your turn without completing the task"
SHELL_HINT = "The shell command keeps failing with"
ANSWER = "The bug is in utils.py, line 3."

#: what the model does next: ("read", path), ("bash", command), ("cut", text) with a read,
#: ("empty", ""), ("fail", url) or ("answer", text)
Step = tuple[str, str]


@dataclass
class Coder:
    """A real ``Agent`` whose ``FunctionModel`` answers from ``policy(requests so far, the
    request's messages)``, with the tools a coding agent has."""

    policy: Callable[[int, list[ModelMessage]], Step]
    requests: list[list[ModelMessage]] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)

    def agent(self) -> Agent[None, str]:
        agent: Agent[None, str] = Agent(
            FunctionModel(self._respond, stream_function=self._stream), name="coder"
        )

        @agent.tool_plain
        def read_file(path: str) -> str:
            """Read a file."""
            self.ran.append(path)
            return f"contents of {path}"

        @agent.tool_plain
        def bash(command: str) -> str:
            """Run a shell command."""
            self.ran.append(command)
            return f"bash: {command.split()[0]}: command not found"

        @agent.tool_plain
        def fetch(url: str) -> str:
            """Fetch a page."""
            self.ran.append(url)
            raise ModelRetry(f"403 permission denied: {url}")

        return agent

    def _next(self, messages: list[ModelMessage]) -> Step:
        self.requests.append(list(messages))
        return self.policy(len(self.requests), messages)

    def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        kind, value = self._next(messages)
        usage = RequestUsage(input_tokens=20, output_tokens=5)
        if kind == "answer":
            return ModelResponse(parts=[TextPart(value)], usage=usage)
        if kind == "empty":
            return ModelResponse(parts=[], usage=usage)
        if kind == "cut":  # an explanation cut off at the token limit, with a read
            parts = [TextPart(value), ToolCallPart("read_file", {"path": "notes.md"})]
            return ModelResponse(parts=parts, usage=usage, finish_reason="length")
        return ModelResponse(parts=[ToolCallPart(*_tool_call(kind, value))], usage=usage)

    async def _stream(
        self, messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[str | DeltaToolCalls]:
        kind, value = self._next(messages)
        if kind == "answer":
            for word in value.split(" "):
                yield word + " "
            return
        name, arguments = _tool_call(kind, value)
        yield {0: DeltaToolCall(name=name, json_args=json.dumps(arguments))}


def _tool_call(kind: str, value: str) -> tuple[str, dict[str, str]]:
    if kind == "bash":
        return "bash", {"command": value}
    if kind == "fail":
        return "fetch", {"url": value}
    return "read_file", {"path": value}


def _user_texts(messages: list[ModelMessage]) -> list[str]:
    return [
        part.content
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, UserPromptPart) and isinstance(part.content, str)
    ]


def _mentions(messages: list[ModelMessage], text: str) -> int:
    return sum(text in content for content in _user_texts(messages))


def _carrying(coder: Coder, text: str) -> list[int]:
    """The indexes of the requests that carry ``text``."""
    return [i for i, request in enumerate(coder.requests) if _mentions(request, text)]


def _assert_last_part_after_the_tool_results(request: list[ModelMessage], text: str) -> None:
    """The message ends the request: the last part of the trailing ``ModelRequest``, after
    the tool results that answer the previous response's tool calls."""
    last = request[-1]
    assert isinstance(last, ModelRequest)
    assert isinstance(last.parts[-1], UserPromptPart) and text in last.parts[-1].content
    assert all(isinstance(part, ToolReturnPart) for part in last.parts[:-1])
    assert isinstance(request[-2], ModelResponse)


def _reads_until_nudged(count: int, messages: list[ModelMessage]) -> Step:
    if _mentions(messages, NUDGE):
        return ("answer", ANSWER)
    return ("read", f"src/f{count}.py")


def _reads_forever(count: int, messages: list[ModelMessage]) -> Step:
    return ("read", f"src/f{count}.py")


async def _drive(agent: Agent[None, str], how: str) -> Any:
    """One run, the way a caller does it: plain, streamed, or node by node with each model
    request streamed (as a UI does)."""
    if how == "run":
        return (await agent.run("Fix the bug.")).output
    if how == "run_stream":
        async with agent.run_stream("Fix the bug.") as streamed:
            return await streamed.get_output()
    async with agent.iter("Fix the bug.") as run:
        node = run.next_node
        while not Agent.is_end_node(node):
            if Agent.is_model_request_node(node):
                async with node.stream(run.ctx) as events:
                    async for _event in events:
                        pass
            node = await run.next(node)
        return run.result.output if run.result is not None else None


def _run(agent: Agent[None, str], how: str) -> Any:
    if how == "run_sync":
        return agent.run_sync("Fix the bug.").output
    return asyncio.run(_drive(agent, how))


@pytest.mark.parametrize("how", ["run_sync", "run", "run_stream", "iter"])
def test_the_nudge_reaches_the_next_request_once_and_a_model_that_listens_completes(
    make_loopguard: Any, how: str
) -> None:
    harness = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    coder = Coder(_reads_until_nudged)

    output = _run(coder.agent(), how)

    assert output.strip() == ANSWER
    # the 3rd read-only step is judged when the 4th turn answers: the 5th request carries it
    assert coder.ran == ["src/f1.py", "src/f2.py", "src/f3.py", "src/f4.py"]
    assert _carrying(coder, NUDGE) == [4]  # the last request, and no other
    assert _mentions(coder.requests[4], NUDGE) == 1
    _assert_last_part_after_the_tool_results(coder.requests[4], NUDGE)
    assert harness.run_state("coder") == "completed"
    delivered = [
        event
        for span in harness.spans()
        for event in span.events
        if event.name == "loopguard.recommendation.delivered"
    ]
    assert [event.attributes["loopguard.detectors"] for event in delivered] == [("read_only_loop",)]


def test_the_nudge_is_not_kept_in_the_runs_message_history(make_loopguard: Any) -> None:
    """Request-only: the conversation pydantic-ai keeps (and a caller resumes) is the
    agent's own."""
    make_loopguard(mode="enforce", read_only_loop_threshold=3)
    coder = Coder(_reads_until_nudged)

    result = coder.agent().run_sync("Fix the bug.")

    assert _mentions(coder.requests[-1], NUDGE) == 1
    assert _mentions(result.all_messages(), NUDGE) == 0


@pytest.mark.parametrize("how", ["run_sync", "run_stream"])
def test_a_model_that_ignores_the_nudge_is_stopped_saying_the_nudge_did_not_help(
    make_loopguard: Any, how: str
) -> None:
    harness = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    coder = Coder(_reads_forever)

    with pytest.raises(LoopGuardInterrupt) as raised:
        _run(coder.agent(), how)

    decision = raised.value.decision
    assert "the nudge did not help" in decision.reason
    assert decision.detectors == ("read_only_loop",)
    assert _carrying(coder, NUDGE) == [4]  # nudged once, never again
    # nudged with the 5th request; its read and the 6th are judged when the 7th turn
    # answers: stopped there, before the 7th read runs
    assert len(coder.requests) == 7
    assert len(coder.ran) == 6
    assert harness.run_state("coder") == "stopped"
    harness.assert_every_span_ended_once()


def test_observe_mode_sends_every_request_as_it_was(make_loopguard: Any) -> None:
    harness = make_loopguard(mode="observe", read_only_loop_threshold=3)
    coder = Coder(lambda count, messages: ("read", f"f{count}") if count < 10 else ("answer", "ok"))

    assert coder.agent().run_sync("Fix the bug.").output == "ok"

    assert harness.decision_events("replan")  # decided, and only recorded
    for text in (NUDGE, CONTINUE, REPROMPT, SHELL_HINT):
        assert _carrying(coder, text) == []


def test_delivery_off_sends_every_request_as_it_was(make_loopguard: Any) -> None:
    make_loopguard(mode="enforce", read_only_loop_threshold=3, deliver_recommendations=False)
    coder = Coder(lambda count, messages: ("read", f"f{count}") if count < 10 else ("answer", "ok"))

    assert coder.agent().run_sync("Fix the bug.").output == "ok"  # a replan never stops

    assert _carrying(coder, NUDGE) == []


@pytest.mark.parametrize("how", ["run_sync", "run_stream"])
def test_the_shell_hint_reaches_the_request_after_the_failures(
    make_loopguard: Any, how: str
) -> None:
    harness = make_loopguard(mode="enforce", shell_failure_threshold=2)

    def policy(count: int, messages: list[ModelMessage]) -> Step:
        if _mentions(messages, SHELL_HINT):
            return ("answer", "pytest is not installed; install it first.")
        return ("bash", "pytest -q")

    coder = Coder(policy)

    output = _run(coder.agent(), how)

    assert output.strip() == "pytest is not installed; install it first."
    assert coder.ran == ["pytest -q", "pytest -q"]
    assert _carrying(coder, SHELL_HINT) == [2]
    _assert_last_part_after_the_tool_results(coder.requests[2], SHELL_HINT)
    assert harness.run_state("coder") == "completed"


def test_the_continuation_prompt_reaches_the_request_after_a_truncated_turn(
    make_loopguard: Any,
) -> None:
    """A turn cut off at the token limit that still asked for a tool: pydantic-ai runs the
    tool and asks again, and that request carries the continuation prompt."""
    make_loopguard(mode="enforce")

    def policy(count: int, messages: list[ModelMessage]) -> Step:
        return ("cut", "Looking at the notes, the") if count == 1 else ("answer", ANSWER)

    coder = Coder(policy)

    assert coder.agent().run_sync("Fix the bug.").output == ANSWER

    assert _carrying(coder, CONTINUE) == [1]
    _assert_last_part_after_the_tool_results(coder.requests[1], CONTINUE)


@pytest.mark.parametrize("how", ["run_sync", "run"])
def test_the_re_prompt_reaches_the_retry_after_an_empty_give_up(
    make_loopguard: Any, how: str
) -> None:
    """pydantic-ai asks again itself after an empty answer: that request carries the
    re-prompt, once, after pydantic-ai's own retry part."""
    harness = make_loopguard(mode="enforce")

    def policy(count: int, messages: list[ModelMessage]) -> Step:
        if count == 1:
            return ("fail", "/admin")
        if count == 2:
            return ("empty", "")
        return ("answer", "I cannot read the admin page: permission denied.")

    coder = Coder(policy)

    output = _run(coder.agent(), how)

    assert output == "I cannot read the admin page: permission denied."
    assert _carrying(coder, REPROMPT) == [2]
    last = coder.requests[2][-1]
    assert isinstance(last, ModelRequest)
    assert isinstance(last.parts[-1], UserPromptPart) and REPROMPT in last.parts[-1].content
    assert sum(REPROMPT in text for text in _user_texts(coder.requests[2])) == 1
    assert harness.run_state("coder") == "completed"


def test_a_truncated_final_answer_is_not_asked_again(make_loopguard: Any) -> None:
    """pydantic-ai ends the run on a text answer, and its step hook cannot hand back another
    response: the continuation waits for a request that never comes (README)."""
    harness = make_loopguard(mode="enforce")
    agent: Agent[None, str] = Agent(
        FunctionModel(
            lambda messages, info: ModelResponse(
                parts=[TextPart("The team plan costs")], finish_reason="length"
            )
        ),
        name="writer",
    )

    assert agent.run_sync("What does the team plan cost?").output == "The team plan costs"
    ((_span, replan),) = harness.decision_events("replan")
    assert replan["loopguard.recommendation.delivery"] == "queued"
    assert harness.run_state("writer") == "completed"
