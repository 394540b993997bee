"""Delivering a replan's recommendation into a real AssistantAgent's next model request.

The model is a scripted ``ChatCompletionClient`` that keeps the messages of every request
and answers from what it reads, so a model that "listens" changes course when the nudge is
in its request; one test runs autogen-ext's real ``OpenAIChatCompletionClient`` against the
scripted OpenAI API and checks the serialised request.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import ModelClientStreamingChunkEvent, TextMessage
from autogen_core.models import (
    AssistantMessage,
    CreateResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    RequestUsage,
    UserMessage,
)
from autogen_core.tools import FunctionTool
from autogen_ext.models.openai import OpenAIChatCompletionClient
from otel_loopguard_testing.scripted_openai import ScriptedAPI, Turn
from scripted_models import COMPLETION_TOKENS, PROMPT_TOKENS, ScriptedClient

from otel_loopguard.engine.decisions import LoopGuardInterrupt

NUDGE = "Act on what you found"
SHELL_HINT = "The shell command keeps failing with"
CONTINUATION = "cut off at the output token limit"
REPROMPT = "You ended your turn without completing the task"
SOURCE = "otel-loopguard"


class Cut(str):
    """A scripted text answer cut off at the token limit (``finish_reason="length"``)."""


#: ``policy(messages)``: a text (a ``Cut`` one is truncated) or ``[(tool, arguments)]``
Policy = Callable[[list[LLMMessage]], Any]


class ListeningClient(ScriptedClient):
    """A scripted client that keeps every request's messages and answers from them."""

    def __init__(self, policy: Policy) -> None:
        self.requests: list[list[LLMMessage]] = []
        self._answers: list[Any] = []
        super().__init__(lambda n: self._answers[-1])
        self._policy = policy

    def _listen(self, messages: Sequence[LLMMessage]) -> CreateResult:
        self.requests.append(list(messages))
        self._answers.append(self._policy(self.requests[-1]))
        result = self._next()
        if isinstance(self._answers[-1], Cut):
            return result.model_copy(update={"finish_reason": "length"})
        return result

    async def create(self, messages: Sequence[LLMMessage], **options: Any) -> CreateResult:
        return self._listen(messages)

    async def create_stream(
        self, messages: Sequence[LLMMessage], **options: Any
    ) -> AsyncGenerator[str | CreateResult, None]:
        result = self._listen(messages)
        if isinstance(result.content, str) and result.content:
            for word in result.content.split(" "):
                yield word + " "
        yield result


def _tools() -> list[FunctionTool]:
    async def read_file(path: str) -> str:
        """Read a file of the repository."""
        return f"contents of {path}"

    async def bash(command: str) -> str:
        """Run a shell command."""
        return f"bash: {command.split()[0]}: command not found"

    async def run_tests(target: str) -> str:
        """Run the test suite."""
        raise RuntimeError("tests could not be collected")

    return [
        FunctionTool(read_file, description="Read a file.", name="read_file"),
        FunctionTool(bash, description="Run a shell command.", name="bash"),
        FunctionTool(run_tests, description="Run the tests.", name="run_tests"),
    ]


def _agent(policy: Policy, *, stream: bool = False, iterations: int = 12) -> AssistantAgent:
    return AssistantAgent(
        "coder",
        model_client=ListeningClient(policy),
        tools=_tools(),
        max_tool_iterations=iterations,
        model_client_stream=stream,
    )


def _text(message: LLMMessage) -> str:
    content = getattr(message, "content", None)
    return content if isinstance(content, str) else ""


def _mentions(request: list[LLMMessage], text: str) -> int:
    return sum(text in _text(message) for message in request)


def _carrying(requests: list[list[LLMMessage]], text: str) -> list[int]:
    return [i for i, request in enumerate(requests) if _mentions(request, text)]


def _reads_until(text: str) -> Policy:
    def policy(messages: list[LLMMessage]) -> Any:
        if _mentions(messages, text):
            return "the fix is in utils.py"
        return [("read_file", {"path": f"f{len(messages)}.py"})]

    return policy


def _reads_forever(messages: list[LLMMessage]) -> Any:
    return [("read_file", {"path": f"f{len(messages)}.py"})]


def _assert_nudged_once_after_the_tool_results(requests: list[list[LLMMessage]], text: str) -> None:
    """One request carries ``text``, once: our user message, last, right after the
    function results it follows; the agent's own context never keeps it."""
    (carrying,) = _carrying(requests, text)
    request = requests[carrying]
    assert _mentions(request, text) == 1
    assert isinstance(request[-1], UserMessage)
    assert request[-1].source == SOURCE
    assert text in request[-1].content
    assert isinstance(request[-2], FunctionExecutionResultMessage)
    assert not any(_mentions(r, text) for r in requests[carrying + 1 :])


def _run(agent: AssistantAgent) -> Any:
    return asyncio.run(agent.run(task="fix the bug in utils.py"))


@pytest.mark.parametrize("stream", [False, True], ids=["create", "create_stream"])
def test_the_read_only_nudge_reaches_the_next_request_once_and_a_listening_model_completes(
    make_loopguard: Any, stream: bool
) -> None:
    harness = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    agent = _agent(_reads_until(NUDGE), stream=stream)

    result = _run(agent)

    assert result.messages[-1].content == "the fix is in utils.py"
    requests = agent._model_client.requests
    _assert_nudged_once_after_the_tool_results(requests, NUDGE)
    assert _carrying(requests, NUDGE) == [len(requests) - 1]
    assert harness.run_state("coder") == "completed"
    events = [e for s in harness.spans() for e in s.events]
    delivered = [e for e in events if e.name == "loopguard.recommendation.delivered"]
    assert [e.attributes["loopguard.detectors"] for e in delivered] == [("read_only_loop",)]


def test_run_stream_delivers_the_nudge(make_loopguard: Any) -> None:
    harness = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    agent = _agent(_reads_until(NUDGE), stream=True)

    async def consume() -> list[Any]:
        return [item async for item in agent.run_stream(task="fix the bug in utils.py")]

    items = asyncio.run(consume())

    assert items[-1].messages[-1].content == "the fix is in utils.py"
    assert any(isinstance(item, ModelClientStreamingChunkEvent) for item in items)
    _assert_nudged_once_after_the_tool_results(agent._model_client.requests, NUDGE)
    assert harness.run_state("coder") == "completed"


def test_a_model_that_ignores_the_nudge_is_stopped_saying_the_nudge_did_not_help(
    make_loopguard: Any,
) -> None:
    harness = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    agent = _agent(_reads_forever, iterations=20)

    with pytest.raises(LoopGuardInterrupt) as stopped:
        _run(agent)

    assert "the nudge did not help" in stopped.value.decision.reason
    assert stopped.value.decision.detectors == ("read_only_loop",)
    assert len(_carrying(agent._model_client.requests, NUDGE)) == 1
    assert harness.run_state("coder") == "stopped"


def test_the_shell_hint_reaches_the_next_request_once(make_loopguard: Any) -> None:
    harness = make_loopguard(mode="enforce", shell_failure_threshold=2)

    def policy(messages: list[LLMMessage]) -> Any:
        if _mentions(messages, SHELL_HINT):
            return "pytest is not installed here"
        return [("bash", {"command": f"pytestx -k case{len(messages)}"})]

    agent = _agent(policy)
    result = _run(agent)

    assert result.messages[-1].content == "pytest is not installed here"
    _assert_nudged_once_after_the_tool_results(agent._model_client.requests, SHELL_HINT)
    assert harness.run_state("coder") == "completed"


@pytest.mark.parametrize("stream", [False, True], ids=["create", "create_stream"])
def test_an_empty_give_up_after_a_failing_tool_is_asked_again(
    make_loopguard: Any, stream: bool
) -> None:
    harness = make_loopguard(mode="enforce")

    def policy(messages: list[LLMMessage]) -> Any:
        if _mentions(messages, REPROMPT):
            return "The tests cannot be collected: conftest.py is broken."
        if isinstance(messages[-1], FunctionExecutionResultMessage):
            return ""  # gives up silently after the failure
        return [("run_tests", {"target": "tests"})]

    agent = _agent(policy, stream=stream)
    result = _run(agent)

    # the agent's turn ends on the answer to the re-prompt, not on the empty one
    assert result.messages[-1].content == "The tests cannot be collected: conftest.py is broken."
    requests = agent._model_client.requests
    assert len(requests) == 3
    assert requests[2][:-1] == requests[1]  # the same request, the re-prompt after it
    _assert_nudged_once_after_the_tool_results(requests, REPROMPT)
    assert harness.run_state("coder") == "completed"


@pytest.mark.parametrize("stream", [False, True], ids=["create", "create_stream"])
def test_a_truncated_answer_is_continued_and_the_agent_gets_the_joined_answer(
    make_loopguard: Any, stream: bool
) -> None:
    harness = make_loopguard(mode="enforce", max_tokens_recoveries=2)
    parts = iter([Cut("The bug is "), Cut("an off-by-one "), "in utils.py, line 3."])
    agent = _agent(lambda messages: next(parts), stream=stream)

    result = _run(agent)

    final = result.messages[-1]
    assert isinstance(final, TextMessage)
    assert final.content == "The bug is an off-by-one in utils.py, line 3."
    assert final.models_usage == RequestUsage(
        prompt_tokens=3 * PROMPT_TOKENS, completion_tokens=3 * COMPLETION_TOKENS
    )
    first, second, third = agent._model_client.requests
    assert second[:-2] == first
    assert second[-2] == AssistantMessage(content="The bug is ", source="coder")
    assert isinstance(second[-1], UserMessage) and CONTINUATION in second[-1].content
    assert third[-2] == AssistantMessage(content="The bug is an off-by-one ", source="coder")
    assert all(_mentions(r, CONTINUATION) <= 1 for r in (first, second, third))
    assert harness.run_state("coder") == "completed"


def test_observe_mode_never_changes_a_request(make_loopguard: Any) -> None:
    make_loopguard(mode="observe", read_only_loop_threshold=3, shell_failure_threshold=2)
    agent = _agent(_reads_forever, iterations=9)

    _run(agent)

    requests = agent._model_client.requests
    assert len(requests) == 9
    assert not _carrying(requests, NUDGE)
    assert not any(isinstance(m, UserMessage) and m.source == SOURCE for r in requests for m in r)


def test_observe_mode_leaves_a_truncated_answer_as_it_is(make_loopguard: Any) -> None:
    make_loopguard(mode="observe")
    agent = _agent(lambda messages: Cut("The bug is "))

    result = _run(agent)

    assert result.messages[-1].content == "The bug is "
    assert len(agent._model_client.requests) == 1


def test_the_openai_client_serialises_the_nudge_after_the_tool_messages(
    make_loopguard: Any,
) -> None:
    harness = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    reads = [Turn(tool_calls=[("read_file", {"path": f"f{i}.py"})]) for i in range(4)]
    api = ScriptedAPI([*reads, Turn(text="the fix is in utils.py")], model="gpt-test")
    base_url, stop = api.serve()
    try:
        client = OpenAIChatCompletionClient(
            model="gpt-test",
            base_url=base_url,
            api_key="test",
            model_info={
                "vision": False,
                "function_calling": True,
                "json_output": False,
                "family": "unknown",
                "structured_output": False,
            },
        )
        agent = AssistantAgent("coder", model_client=client, tools=_tools(), max_tool_iterations=8)
        result = _run(agent)
    finally:
        stop()

    assert result.messages[-1].content == "the fix is in utils.py"
    sent = [json.loads(json.dumps(r["messages"])) for r in api.requests]
    carrying = [i for i, messages in enumerate(sent) if NUDGE in json.dumps(messages)]
    assert carrying == [len(sent) - 1]
    last = sent[-1]
    assert last[-1]["role"] == "user" and NUDGE in last[-1]["content"]
    assert last[-2]["role"] == "tool"
    assert last[-3]["role"] == "assistant" and last[-3]["tool_calls"]
    assert harness.run_state("coder") == "completed"
