"""Delivered recommendations in real LangGraph runs: what the chat model receives.

In ``enforce`` mode a replan's recommendation (the read-only nudge, the shell hint, the
continuation prompt, the re-prompt after an empty give-up) goes into the run's next chat
model request as a ``HumanMessage`` at the end of its messages, once; a model that ignores
it is stopped by the ladder. The model is a real ``BaseChatModel`` subclass that records the
messages of every request and answers from a policy over them, so a model that "reads"
the message can change course. The agents are LangGraph's ``create_react_agent`` (driven
by ``invoke``, ``ainvoke`` and ``stream``) and a ReAct graph whose model node streams its
model itself (``model.stream`` / ``astream``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from agents import RUN_CONFIG, USER_INPUT, _chunks_of
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import BaseTool, tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from otel_loopguard_testing.scripted_openai import ScriptedAPI, Turn, http
from pydantic import Field

from otel_loopguard import LoopGuardInterrupt

NUDGE = "Act on what you found"
SHELL_HINT = "The shell command keeps failing with"
CONTINUATION = "cut off at the output token limit"
REPROMPT = "You ended your turn without completing the task"
EVERY_RECOMMENDATION = (NUDGE, SHELL_HINT, CONTINUATION, REPROMPT)
USAGE = {"input_tokens": 40, "output_tokens": 10, "total_tokens": 50}

Policy = Callable[[list[BaseMessage]], AIMessage]


class RecordingChatModel(BaseChatModel):
    """A chat model provider integration, offline: every request's messages are recorded,
    the answer is ``policy(messages)`` (with usage and a finish reason, as a provider's)."""

    policy: Any
    requests: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "recording"

    def bind_tools(self, tools: Any, **kwargs: Any) -> RecordingChatModel:  # type: ignore[override]
        return self

    def _answer(self, messages: list[BaseMessage]) -> AIMessage:
        self.requests.append(list(messages))
        return self.policy(messages)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._answer(messages))])

    def _stream(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        for chunk in _chunks_of(self._answer(messages)):
            yield ChatGenerationChunk(message=chunk)


def answer(text: str, finish: str = "stop") -> AIMessage:
    return AIMessage(
        content=text,
        usage_metadata=dict(USAGE),  # type: ignore[arg-type]
        response_metadata={"finish_reason": finish, "model_name": "scripted-1"},
    )


def call(name: str, args: dict[str, Any], messages: list[BaseMessage]) -> AIMessage:
    message = answer("", "tool_calls")
    message.tool_calls = [{"name": name, "args": args, "id": f"call_{len(messages)}"}]
    return message


def mentions(message: BaseMessage, text: str) -> int:
    return str(message.content).count(text)


def told(messages: list[BaseMessage], text: str) -> bool:
    """The request's last message is our recommendation (a model that reads it)."""
    return isinstance(messages[-1], HumanMessage) and text in str(messages[-1].content)


# -- the tools and the policies of the four replans --------------------------------------


@tool
def read_file(path: str) -> str:
    """Read a file of the repository."""
    return f"contents of {path}"


@tool
def bash(command: str) -> str:
    """Run a shell command."""
    return f"bash: {command.split()[0]}: command not found"


@tool
def run_tests() -> str:
    """Run the test suite."""
    raise RuntimeError("3 tests failed")


TOOLS: list[BaseTool] = [read_file, bash, run_tests]


def reads_until_nudged(messages: list[BaseMessage]) -> AIMessage:
    if told(messages, NUDGE):
        return answer("The bug is in utils.py; here is the fix.")
    return call("read_file", {"path": f"f{len(messages)}.py"}, messages)


def reads_forever(messages: list[BaseMessage]) -> AIMessage:
    return call("read_file", {"path": f"f{len(messages)}.py"}, messages)


def reads_six_times(messages: list[BaseMessage]) -> AIMessage:
    if sum(isinstance(m, ToolMessage) for m in messages) >= 6:
        return answer("done reading")
    return reads_forever(messages)


def shell_until_hinted(messages: list[BaseMessage]) -> AIMessage:
    if told(messages, SHELL_HINT):
        return answer("pytest is not installed here; install it first.")
    if sum(isinstance(m, ToolMessage) for m in messages) >= 4:
        return answer("giving up on pytest")
    return call("bash", {"command": f"pytest -k t{len(messages)}"}, messages)


def cut_once(messages: list[BaseMessage]) -> AIMessage:
    if told(messages, CONTINUATION):
        return answer(" line 3.")
    return answer("The fix is in utils.py,", "length")


def gives_up_after_failing(messages: list[BaseMessage]) -> AIMessage:
    if told(messages, REPROMPT):
        return answer("The tests fail: 3 errors in utils.py.")
    if isinstance(messages[-1], ToolMessage):
        return answer("")  # an empty end of turn right after the failing tool
    return call("run_tests", {}, messages)


# -- the agents and how they are driven --------------------------------------------------

PATHS = ["invoke", "ainvoke", "stream", "model_stream", "model_astream"]
#: the paths where the chat model's generate method answers (the re-asks live there)
GENERATE_PATHS = ["invoke", "ainvoke", "stream"]


def build(model: RecordingChatModel, path: str) -> Any:
    """``create_react_agent``; for the ``model_*`` paths a ReAct graph whose model node
    streams the model itself and adds the chunks up."""
    if path not in ("model_stream", "model_astream"):
        import warnings

        from langgraph.prebuilt import create_react_agent

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return create_react_agent(model, ToolNode(TOOLS, handle_tool_errors=True), name="coder")

    def streamed(state: MessagesState) -> dict[str, Any]:
        total = None
        for chunk in model.stream(state["messages"]):
            total = chunk if total is None else total + chunk
        return {"messages": [total]}

    async def astreamed(state: MessagesState) -> dict[str, Any]:
        total = None
        chunks: AsyncIterator[Any] = model.astream(state["messages"])
        async for chunk in chunks:
            total = chunk if total is None else total + chunk
        return {"messages": [total]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", streamed if path == "model_stream" else astreamed)
    graph.add_node("tools", ToolNode(TOOLS, handle_tool_errors=True))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(name="coder")


def run(policy: Policy, path: str) -> tuple[RecordingChatModel, dict[str, Any]]:
    """One run of the agent on ``path``: the model (its requests) and the final state."""
    model = RecordingChatModel(policy=policy)
    graph = build(model, path)
    if path in ("ainvoke", "model_astream"):
        return model, asyncio.run(graph.ainvoke(USER_INPUT, RUN_CONFIG))
    if path == "stream":  # the graph's stream, the model's tokens streamed through it
        state: dict[str, Any] = {}
        for mode, item in graph.stream(USER_INPUT, RUN_CONFIG, stream_mode=["values", "messages"]):
            if mode == "values":
                state = item
        return model, state
    return model, graph.invoke(USER_INPUT, RUN_CONFIG)


def carrying(model: RecordingChatModel, text: str) -> list[int]:
    """The indexes of the requests that carry ``text``, checking it is there once, as the
    last message, a user message after the tool results it follows (or the answer so far)."""
    found = []
    for index, request in enumerate(model.requests):
        count = sum(mentions(m, text) for m in request)
        if not count:
            continue
        assert count == 1, f"request {index} carries the recommendation {count} times"
        assert isinstance(request[-1], HumanMessage) and text in str(request[-1].content)
        assert isinstance(request[-2], (ToolMessage, AIMessage))
        found.append(index)
    return found


# -- 1, 2, 3: the message arrives once, where a user message may stand ---------------------


@pytest.mark.parametrize("path", PATHS)
def test_a_model_that_heeds_the_read_only_nudge_completes(make_loopguard: Any, path: str) -> None:
    harness = make_loopguard(mode="enforce", read_only_loop_threshold=3)

    model, state = run(reads_until_nudged, path)

    # exactly one request carried the nudge: the last one, after the 4th read's result
    assert carrying(model, NUDGE) == [len(model.requests) - 1]
    assert isinstance(model.requests[-1][-2], ToolMessage)
    assert state["messages"][-1].content == "The bug is in utils.py; here is the fix."
    # the graph's state holds what the agent wrote, not our message
    assert not any(mentions(m, NUDGE) for m in state["messages"])
    assert harness.run_state("coder") == "completed"
    delivered = [
        dict(e.attributes or {})
        for s in harness.spans()
        for e in s.events
        if e.name == "loopguard.recommendation.delivered"
    ]
    assert [d["loopguard.detectors"] for d in delivered] == [("read_only_loop",)]


@pytest.mark.parametrize("path", PATHS)
def test_a_model_that_ignores_the_nudge_is_stopped(make_loopguard: Any, path: str) -> None:
    harness = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    model = RecordingChatModel(policy=reads_forever)
    graph = build(model, path)

    with pytest.raises(LoopGuardInterrupt) as raised:
        if path in ("ainvoke", "model_astream"):
            asyncio.run(graph.ainvoke(USER_INPUT, RUN_CONFIG))
        elif path == "stream":
            for _ in graph.stream(USER_INPUT, RUN_CONFIG, stream_mode="messages"):
                pass
        else:
            graph.invoke(USER_INPUT, RUN_CONFIG)

    assert "the nudge did not help" in raised.value.decision.reason
    assert raised.value.decision.detectors == ("read_only_loop",)
    assert len(carrying(model, NUDGE)) == 1
    assert len(model.requests) < 12  # stopped at the ladder, not at the recursion limit
    assert harness.run_state("coder") == "stopped"


@pytest.mark.parametrize("path", PATHS)
def test_the_shell_hint_reaches_the_next_request_once(make_loopguard: Any, path: str) -> None:
    harness = make_loopguard(mode="enforce", shell_failure_threshold=2)

    model, state = run(shell_until_hinted, path)

    (index,) = carrying(model, SHELL_HINT)
    assert index == 2  # after the second failing command
    assert isinstance(model.requests[index][-2], ToolMessage)
    assert "command not found" in str(model.requests[index][-1].content)
    assert state["messages"][-1].content == "pytest is not installed here; install it first."
    assert harness.run_state("coder") == "completed"


@pytest.mark.parametrize("path", GENERATE_PATHS)
def test_a_truncated_answer_is_continued_and_the_graph_gets_it_joined(
    make_loopguard: Any, path: str
) -> None:
    harness = make_loopguard(mode="enforce")

    model, state = run(cut_once, path)

    assert carrying(model, CONTINUATION) == [1]
    second = model.requests[1]
    assert isinstance(second[-2], AIMessage) and second[-2].content == "The fix is in utils.py,"
    final = state["messages"][-1]
    assert final.content == "The fix is in utils.py, line 3."
    assert final.usage_metadata["output_tokens"] == 20  # both calls' usage
    assert final.usage_metadata["input_tokens"] == 80
    assert final.response_metadata["finish_reason"] == "stop"
    # one answer in the graph's history, not the cut one and then its continuation
    assert [m.content for m in state["messages"] if isinstance(m, AIMessage)] == [final.content]
    assert harness.run_state("coder") == "completed"


@pytest.mark.parametrize("path", GENERATE_PATHS)
def test_an_empty_give_up_after_a_failing_tool_is_re_prompted(
    make_loopguard: Any, path: str
) -> None:
    harness = make_loopguard(mode="enforce")

    model, state = run(gives_up_after_failing, path)

    (index,) = carrying(model, REPROMPT)
    assert index == 2 and len(model.requests) == 3
    request = model.requests[index]
    # the re-prompt follows the failing tool's result; the empty answer is not sent back
    assert isinstance(request[-2], ToolMessage) and request[-2].status == "error"
    assert state["messages"][-1].content == "The tests fail: 3 errors in utils.py."
    assert not any(
        isinstance(m, AIMessage) and m.content == "" and not m.tool_calls for m in state["messages"]
    )
    assert harness.run_state("coder") == "completed"


@pytest.mark.parametrize("path", ["model_stream", "model_astream"])
def test_a_streamed_answer_is_not_asked_again(make_loopguard: Any, path: str) -> None:
    """The caller already has a streamed answer's chunks: a cut one ends the run as it is
    (the continuation prompt waits for a next model call that never comes)."""
    make_loopguard(mode="enforce")

    model, state = run(cut_once, path)

    assert len(model.requests) == 1
    assert state["messages"][-1].content == "The fix is in utils.py,"


# -- the request ChatOpenAI sends: the OpenAI SDK's serialised chat completion request ------


def chat_openai(api: ScriptedAPI) -> Any:
    """The real ``langchain-openai`` model over the real OpenAI SDK, its HTTP answered by
    the scripted API (no network)."""
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model="gpt-test",
        api_key="test-key",  # type: ignore[arg-type]
        base_url="http://llm.test/v1",
        max_retries=0,
        http_client=http.Client(transport=http.MockTransport(api.handle)),
        http_async_client=http.AsyncClient(transport=http.MockTransport(api.handle)),
    )


def drive(graph: Any, path: str) -> dict[str, Any]:
    if path in ("ainvoke", "model_astream"):
        return asyncio.run(graph.ainvoke(USER_INPUT, RUN_CONFIG))
    return graph.invoke(USER_INPUT, RUN_CONFIG)


@pytest.mark.parametrize("path", ["invoke", "ainvoke", "model_stream", "model_astream"])
def test_chat_openai_sends_the_nudge_as_a_user_message_after_the_tool_results(
    make_loopguard: Any, path: str
) -> None:
    harness = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    reads = [Turn(tool_calls=[("read_file", {"path": f"f{i}.py"})]) for i in range(4)]
    api = ScriptedAPI([*reads, Turn(text="The bug is in utils.py.")])

    state = drive(build(chat_openai(api), path), path)

    assert state["messages"][-1].content == "The bug is in utils.py."
    sent = [request["messages"] for request in api.requests]
    carried = [sum(NUDGE in str(m.get("content")) for m in messages) for messages in sent]
    assert carried == [0, 0, 0, 0, 1]
    *_, assistant, tool_result, nudge = sent[4]
    assert assistant["role"] == "assistant" and assistant["tool_calls"]
    assert tool_result["role"] == "tool"
    assert tool_result["tool_call_id"] == assistant["tool_calls"][0]["id"]
    assert nudge["role"] == "user" and NUDGE in nudge["content"]
    assert harness.run_state("coder") == "completed"


@pytest.mark.parametrize("path", ["invoke", "ainvoke"])
def test_chat_openai_continues_a_truncated_answer(make_loopguard: Any, path: str) -> None:
    make_loopguard(mode="enforce")
    api = ScriptedAPI(
        [
            Turn(text="The fix is in utils.py,", finish_reason="length", output_tokens=7),
            Turn(text=" line 3.", output_tokens=3),
        ]
    )

    state = drive(build(chat_openai(api), path), path)

    final = state["messages"][-1]
    assert final.content == "The fix is in utils.py, line 3."
    assert final.usage_metadata["output_tokens"] == 10
    first, second = (request["messages"] for request in api.requests)
    *_, answer_so_far, continuation = second
    assert second[: len(first)] == first
    assert answer_so_far == {"role": "assistant", "content": "The fix is in utils.py,"}
    assert continuation["role"] == "user" and CONTINUATION in continuation["content"]


# -- 4: observe mode -----------------------------------------------------------------------


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    "policy", [reads_six_times, shell_until_hinted, cut_once, gives_up_after_failing]
)
def test_observe_mode_leaves_every_request_unchanged(
    make_loopguard: Any, path: str, policy: Policy
) -> None:
    harness = make_loopguard(mode="observe", read_only_loop_threshold=3, shell_failure_threshold=2)

    model, _state = run(policy, path)

    for request in model.requests:
        assert not any(mentions(m, text) for m in request for text in EVERY_RECOMMENDATION)
        assert sum(isinstance(m, HumanMessage) for m in request) == 1  # the user's question
    assert harness.decision_events("replan")  # the replan was decided, only not delivered
    assert harness.run_state("coder") == "completed"


def test_delivery_off_leaves_every_request_unchanged(make_loopguard: Any) -> None:
    make_loopguard(mode="enforce", read_only_loop_threshold=3, deliver_recommendations=False)

    model, _state = run(reads_six_times, "invoke")

    assert not carrying(model, NUDGE)
    assert len(model.requests) == 7
