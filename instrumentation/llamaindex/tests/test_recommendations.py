"""Recommendations reach the model: a replan's message is in the run's next LLM request, once.

Real ``FunctionAgent`` / ``ReActAgent`` / ``AgentWorkflow`` runs with llama-index-core's
``MockFunctionCallingLLM``, answering from a script that sees the messages the LLM receives
(so a model can change course when it reads the recommendation); ``ScriptedLLM`` records
each request and puts an OpenAI-style ``raw`` (usage, ``choices[0].finish_reason``) on its
answers, as ``llama-index-llms-openai`` does, so a script can cut an answer off at the
token limit.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from agents import USER_MESSAGE
from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent, ReActAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.bridge.pydantic import Field
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.tools import FunctionTool

from otel_loopguard import LoopGuardInterrupt

READ_ONLY = "Act on what you found"
SHELL = "The shell command keeps failing"
GIVE_UP = "You ended your turn without completing the task"
CUT = "cut off at the output token limit"

Script = Callable[[Sequence[ChatMessage], int], ChatMessage]


class ScriptedLLM(MockFunctionCallingLLM):
    """Answers ``script(messages, n)`` (``n``: the request's number); records every request.
    An answer whose ``additional_kwargs["finish"]`` is set reports that finish reason."""

    requests: list[list[ChatMessage]] = Field(default_factory=list, exclude=True)

    def __init__(self, script: Script, **kwargs: Any) -> None:
        super().__init__(response_generator=self._answer, **kwargs)
        self._script = script

    def _answer(self, messages: Sequence[ChatMessage], **_: Any) -> ChatMessage:
        self.requests.append(list(messages))
        return self._script(messages, len(self.requests))

    @staticmethod
    def _raw(message: ChatMessage) -> dict[str, Any]:
        asks = any(isinstance(block, ToolCallBlock) for block in message.blocks)
        finish = message.additional_kwargs.pop("finish", "tool_calls" if asks else "stop")
        return {
            "model": "scripted-gpt",
            "choices": [{"index": 0, "finish_reason": finish}],
            "usage": {"prompt_tokens": 60, "completion_tokens": 10},
        }

    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> Any:
        response = await super().achat(messages, **kwargs)
        response.raw = self._raw(response.message)
        return response

    async def astream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> Any:
        chunks = [chunk async for chunk in await super().astream_chat(messages, **kwargs)]
        chunks[-1].raw = self._raw(chunks[-1].message)

        async def replay() -> Any:
            for chunk in chunks:
                yield chunk

        return replay()


def call_tool(name: str, n: int, **kwargs: Any) -> ChatMessage:
    return ChatMessage(
        role=MessageRole.ASSISTANT,
        blocks=[ToolCallBlock(tool_call_id=f"call_{n}", tool_name=name, tool_kwargs=kwargs)],
    )


def answer(text: str, finish: str | None = None) -> ChatMessage:
    message = ChatMessage(role=MessageRole.ASSISTANT, content=text)
    if finish is not None:
        message.additional_kwargs["finish"] = finish
    return message


def tools() -> list[FunctionTool]:
    async def read_file(path: str) -> str:
        """Read a file."""
        return f"contents of {path}"

    async def bash(command: str) -> str:
        """Run a shell command."""
        return f"bash: {command.split()[0]}: command not found"

    async def deploy(target: str) -> str:
        """Deploy the service."""
        raise RuntimeError(f"deploy to {target} failed: connection refused")

    return [FunctionTool.from_defaults(async_fn=fn) for fn in (read_file, bash, deploy)]


def function_agent(script: Script, *, streaming: bool = False) -> FunctionAgent:
    return FunctionAgent(
        name="coder",
        description="Fixes bugs.",
        tools=tools(),
        llm=ScriptedLLM(script),
        streaming=streaming,
    )


async def run(agent: Any, *, stream: bool = False) -> Any:
    handler = agent.run(user_msg=USER_MESSAGE, max_iterations=40)
    if stream:
        async for _event in handler.stream_events():
            pass
    return await asyncio.wait_for(handler, 30)


def mentions(request: Sequence[ChatMessage], text: str) -> int:
    return sum(str(message.content or "").count(text) for message in request)


def carrying(llm: ScriptedLLM, text: str) -> list[int]:
    return [i for i, request in enumerate(llm.requests) if mentions(request, text)]


def told(messages: Sequence[ChatMessage], text: str) -> bool:
    """The last message is ours: a user message with ``text``."""
    return messages[-1].role == MessageRole.USER and text in str(messages[-1].content)


def assert_after_the_tool_results(request: Sequence[ChatMessage], text: str) -> None:
    """The recommendation is the last message, a user message, once; before it the tool
    messages that answer every tool call of the assistant message before them."""
    assert mentions(request, text) == 1
    assert told(request, text)
    results = list(itertools.takewhile(lambda m: m.role == MessageRole.TOOL, request[-2::-1]))
    assert results, "right after the tool results"
    asked = request[-2 - len(results)]
    assert asked.role == MessageRole.ASSISTANT
    called = {b.tool_call_id for b in asked.blocks if isinstance(b, ToolCallBlock)}
    assert called == {m.additional_kwargs["tool_call_id"] for m in results}


def reads_until(nudge: str | None) -> Script:
    def script(messages: Sequence[ChatMessage], n: int) -> ChatMessage:
        if nudge is not None and told(messages, nudge):
            return answer("The bug is in utils.py; fixed.")
        return call_tool("read_file", n, path=f"f{n}.py")

    return script


def delivered(guard: Any) -> list[tuple[str, ...]]:
    return [
        tuple(event.attributes["loopguard.detectors"])
        for span in guard.spans()
        for event in span.events
        if event.name == "loopguard.recommendation.delivered"
    ]


@pytest.mark.parametrize(
    ("streaming", "stream"),
    [(False, False), (False, True), (True, True)],
    ids=["achat", "achat-stream-events", "astream-chat"],
)
async def test_read_only_nudge_reaches_the_next_request_once_and_a_listening_model_completes(
    make_loopguard, streaming, stream
):
    guard = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    agent = function_agent(reads_until(READ_ONLY), streaming=streaming)

    result = await run(agent, stream=stream)

    assert "fixed" in str(result)
    llm = agent.llm
    assert carrying(llm, READ_ONLY) == [len(llm.requests) - 1]  # the last request only
    assert_after_the_tool_results(llm.requests[-1], READ_ONLY)
    (run_span,) = guard.agent_spans()
    assert run_span.attributes["loopguard.run.state"] == "completed"
    assert delivered(guard) == [("read_only_loop",)]
    guard.assert_every_span_ended_once()


async def test_the_nudge_is_not_kept_in_the_agents_history(make_loopguard):
    make_loopguard(mode="enforce", read_only_loop_threshold=3)
    agent = function_agent(reads_until(READ_ONLY))
    handler = agent.run(user_msg=USER_MESSAGE)
    await asyncio.wait_for(handler, 30)

    memory = await handler.ctx.store.get("memory")
    assert not any(READ_ONLY in str(m.content) for m in await memory.aget())


@pytest.mark.parametrize("streaming", [False, True], ids=["achat", "astream-chat"])
async def test_a_model_that_ignores_the_nudge_is_stopped_saying_the_nudge_did_not_help(
    make_loopguard, streaming
):
    guard = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    agent = function_agent(reads_until(None), streaming=streaming)

    with pytest.raises(LoopGuardInterrupt) as raised:
        await run(agent, stream=streaming)

    assert "the nudge did not help" in raised.value.decision.reason
    assert raised.value.decision.detectors == ("read_only_loop",)
    assert len(carrying(agent.llm, READ_ONLY)) == 1
    (run_span,) = guard.agent_spans()
    assert run_span.attributes["loopguard.run.state"] == "stopped"


async def test_shell_hint_reaches_the_next_request(make_loopguard):
    guard = make_loopguard(mode="enforce", shell_failure_threshold=2)

    def script(messages: Sequence[ChatMessage], n: int) -> ChatMessage:
        if told(messages, SHELL):
            return answer("ripgrep is not installed here.")
        return call_tool("bash", n, command=f"rg pattern{n} src")

    agent = function_agent(script)

    assert "not installed" in str(await run(agent))
    assert carrying(agent.llm, SHELL) == [2]  # after the second failure
    assert_after_the_tool_results(agent.llm.requests[2], SHELL)
    assert guard.agent_spans()[0].attributes["loopguard.run.state"] == "completed"


@pytest.mark.parametrize("streaming", [False, True], ids=["achat", "astream-chat"])
async def test_an_empty_give_up_after_a_failing_tool_is_asked_again_in_the_same_turn(
    make_loopguard, streaming
):
    """FunctionAgent would end the run on the empty answer: it is asked again at once, with
    the re-prompt, and the caller gets the new answer."""
    guard = make_loopguard(mode="enforce")

    def script(messages: Sequence[ChatMessage], n: int) -> ChatMessage:
        if told(messages, GIVE_UP):
            return answer("The deploy failed: connection refused.")
        if n == 1:
            return call_tool("deploy", n, target="prod")
        return answer("")

    agent = function_agent(script, streaming=streaming)

    result = await run(agent, stream=streaming)

    assert str(result) == "The deploy failed: connection refused."
    llm = agent.llm
    assert len(llm.requests) == 3
    assert carrying(llm, GIVE_UP) == [2]
    retry = llm.requests[2]
    assert mentions(retry, GIVE_UP) == 1 and told(retry, GIVE_UP)
    assert retry[-2].role == MessageRole.ASSISTANT and not retry[-2].content  # the empty one
    assert delivered(guard) == [("premature_end",)]
    assert guard.agent_spans()[0].attributes["loopguard.run.state"] == "completed"


@pytest.mark.parametrize("streaming", [False, True], ids=["achat", "astream-chat"])
async def test_a_truncated_answer_is_continued_and_the_caller_gets_it_joined(
    make_loopguard, streaming
):
    guard = make_loopguard(mode="enforce", max_tokens_recoveries=2)
    parts = iter(["The fix is ", "in utils.py, ", "line 3."])

    def script(messages: Sequence[ChatMessage], n: int) -> ChatMessage:
        text = next(parts)
        return answer(text, None if text.endswith(".") else "length")

    agent = function_agent(script, streaming=streaming)

    result = await run(agent, stream=streaming)

    assert str(result) == "The fix is in utils.py, line 3."
    llm = agent.llm
    assert len(llm.requests) == 3
    second = llm.requests[1]
    assert second[-2].role == MessageRole.ASSISTANT and second[-2].content == "The fix is "
    assert told(second, CUT) and mentions(second, CUT) == 1
    assert all(mentions(request, CUT) <= 1 for request in llm.requests)
    assert guard.agent_spans()[0].attributes["loopguard.run.state"] == "completed"


async def test_truncations_past_the_recoveries_end_the_turn_as_they_are(make_loopguard):
    make_loopguard(mode="enforce", max_tokens_recoveries=1)
    agent = function_agent(lambda messages, n: answer("more ", "length"))

    result = await run(agent)

    assert len(agent.llm.requests) == 2  # one continuation, then the answer as it is
    assert str(result) == "more more "


async def test_react_agent_gets_the_nudge_after_its_last_observation(make_loopguard):
    guard = make_loopguard(mode="enforce", read_only_loop_threshold=3)

    def script(messages: Sequence[ChatMessage], n: int) -> ChatMessage:
        if told(messages, READ_ONLY):
            return answer("Thought: I can answer.\nAnswer: the bug is in utils.py")
        return answer(
            f'Thought: read more.\nAction: read_file\nAction Input: {{"path": "f{n}.py"}}'
        )

    agent = ReActAgent(name="coder", tools=tools(), llm=ScriptedLLM(script))

    assert "utils.py" in str(await run(agent))
    llm = agent.llm
    assert carrying(llm, READ_ONLY) == [len(llm.requests) - 1]
    last = llm.requests[-1]
    assert told(last, READ_ONLY)
    assert "Observation: contents of" in str(last[-2].content)
    assert guard.agent_spans()[0].attributes["loopguard.run.state"] == "completed"


async def test_a_multi_agent_workflow_delivers_to_the_acting_agent(make_loopguard):
    guard = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    agent = function_agent(reads_until(READ_ONLY))
    workflow = AgentWorkflow(agents=[agent], root_agent="coder")

    assert "fixed" in str(await run(workflow, stream=True))
    assert carrying(agent.llm, READ_ONLY) == [len(agent.llm.requests) - 1]
    assert_after_the_tool_results(agent.llm.requests[-1], READ_ONLY)
    assert delivered(guard) == [("read_only_loop",)]


async def test_observe_mode_leaves_every_request_as_without_the_plugin(make_loopguard):
    guard = make_loopguard(mode="observe", read_only_loop_threshold=3)

    def script(messages: Sequence[ChatMessage], n: int) -> ChatMessage:
        if n > 8:
            return answer("gave up")
        return call_tool("read_file", n, path=f"f{n}.py")

    def dumped(llm: ScriptedLLM) -> list[list[dict[str, Any]]]:
        return [[m.model_dump() for m in request] for request in llm.requests]

    baseline = function_agent(script)
    guard.uninstrument()  # what the application gets without the plugin
    try:
        await run(baseline)
    finally:
        guard.reinstrument()
    observed = function_agent(script)
    await run(observed)

    assert dumped(observed.llm) == dumped(baseline.llm)
    assert not any(mentions(request, READ_ONLY) for request in observed.llm.requests)
    assert any(d.action.value == "replan" for d, _ in guard.decided)
