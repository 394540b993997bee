"""Offline LangGraph agents driven by langchain-core's own fake chat model.

The model is :class:`GenericFakeChatModel` (it replays scripted ``AIMessage`` objects, tool
calls included); ``bind_tools`` is a no-op because the script already decides which tools are
called. The tools are real ``@tool`` functions that count their executions, so tests can
assert how many times a tool body really ran.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from typing import Annotated, Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.tools import BaseTool, InjectedToolCallId, tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command
from otel_loopguard_testing.scripted_models import ToolCounter

from otel_loopguard.guard import get_guard

CATALOG = {
    "pricing": "Pro plan costs 20 EUR per month",
    "limits": "Pro plan allows 5 seats",
    "refunds": "refunds within 30 days",
}


class ScriptedChatModel(GenericFakeChatModel):
    """The framework's fake chat model, usable where an agent binds tools first."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        return self


def make_tools(counter: ToolCounter) -> list[BaseTool]:
    @tool
    def search(query: str) -> str:
        """Search the product knowledge base."""
        counter.hit("search")
        return "no results"

    @tool
    def lookup(topic: str) -> str:
        """Look up one topic in the product catalog."""
        counter.hit("lookup")
        return CATALOG.get(topic, "unknown topic")

    return [search, lookup]


def _call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


def looping_script(give_up_after: int | None = None) -> Iterator[AIMessage]:
    """A model stuck on one call: the same search again, ignoring the empty result.

    Forever by default; with ``give_up_after`` it gives up with an answer after that many
    calls, so a run without enforcement has a natural end to compare against.
    """
    for index in itertools.count():
        if give_up_after is not None and index >= give_up_after:
            yield AIMessage(content="I could not find the price.")
            return
        yield _call("search", {"query": "pro plan price"}, f"call_{index}")


def productive_script() -> Iterator[AIMessage]:
    """Distinct lookups with changing results, then a final answer."""
    for index, topic in enumerate(("pricing", "limits", "refunds")):
        yield _call("lookup", {"topic": topic}, f"call_{index}")
    yield AIMessage(content="The Pro plan costs 20 EUR per month for up to 5 seats.")


def build_react_graph(
    script: Iterator[AIMessage],
    counter: ToolCounter,
    *,
    name: str = "support_agent",
    model: Any = None,
    tools: list[BaseTool] | None = None,
    stream_model: bool = False,
) -> Any:
    """A ReAct loop as a StateGraph: model node, ToolNode (errors handled), back to model.

    ``model`` replaces the fake model built on ``script``; ``tools`` the counted tools. With
    ``stream_model`` the model node streams the model itself (``model.stream``) and adds
    the chunks up, as a node that forwards tokens to a UI does.
    """
    model = model if model is not None else ScriptedChatModel(messages=script)

    def call_model(state: MessagesState) -> dict[str, Any]:
        if not stream_model:
            return {"messages": [model.invoke(state["messages"])]}
        answer = None
        for chunk in model.stream(state["messages"]):
            answer = chunk if answer is None else answer + chunk
        return {"messages": [answer]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", call_model)
    tools = tools if tools is not None else make_tools(counter)
    graph.add_node("tools", ToolNode(tools, handle_tool_errors=True))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(name=name)


def build_parent_graph(
    script: Iterator[AIMessage], counter: ToolCounter, *, name: str = "orchestrator"
) -> Any:
    """An outer graph whose only node is the ReAct graph: a nested (subgraph) run."""
    inner = build_react_graph(script, counter, name="researcher")
    graph = StateGraph(MessagesState)
    graph.add_node("researcher", inner)
    graph.add_edge(START, "researcher")
    return graph.compile(name=name)


def tool_message_contents(state: dict[str, Any]) -> list[str]:
    return [m.content for m in state["messages"] if isinstance(m, ToolMessage)]


def final_answer(state: dict[str, Any]) -> str:
    return str(state["messages"][-1].content)


USER_INPUT = {"messages": [("user", "How much is the Pro plan?")]}
RUN_CONFIG = {"recursion_limit": 60}


def run_react_graph(
    script: Iterator[AIMessage], counter: ToolCounter, *, model: Any = None
) -> dict[str, Any]:
    """One invocation of a fresh ReAct graph (``build_react_graph``) on the user's question:
    its final state. For the tests that need nothing of the graph but its answer."""
    return build_react_graph(script, counter, model=model).invoke(USER_INPUT, RUN_CONFIG)


def make_handoff_tool(target: str, counter: ToolCounter) -> BaseTool:
    """A ``transfer_to_<agent>`` tool: the LangGraph handoff idiom (a ``Command`` to the parent)."""
    name = f"transfer_to_{target}"

    @tool(name)
    def transfer(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Hand the conversation to another agent."""
        counter.hit(name)
        message = ToolMessage(content=f"Transferred to {target}", tool_call_id=tool_call_id)
        return Command(goto=target, graph=Command.PARENT, update={"messages": [message]})

    return transfer


def ping_pong_script(target: str) -> Iterator[AIMessage]:
    """An agent that always hands the task to ``target``."""
    for index in itertools.count():
        yield _call(f"transfer_to_{target}", {}, f"{target}_{index}")


def build_handoff_graph(counter: ToolCounter, *, name: str = "swarm") -> Any:
    """Two agents that keep handing the task back and forth: a closed handoff cycle."""

    def agent(agent_name: str, target: str) -> Any:
        model = ScriptedChatModel(messages=ping_pong_script(target))

        def call_model(state: MessagesState) -> dict[str, Any]:
            return {"messages": [model.invoke(state["messages"])]}

        sub = StateGraph(MessagesState)
        sub.add_node("agent", call_model)
        sub.add_node("tools", ToolNode([make_handoff_tool(target, counter)]))
        sub.add_edge(START, "agent")
        sub.add_conditional_edges("agent", tools_condition)
        sub.add_edge("tools", "agent")
        return sub.compile(name=agent_name)

    graph = StateGraph(MessagesState)
    graph.add_node("alice", agent("alice", "bob"), destinations=("bob",))
    graph.add_node("bob", agent("bob", "alice"), destinations=("alice",))
    graph.add_edge(START, "alice")
    return graph.compile(name=name)


def build_prebuilt_agent(script: Iterator[AIMessage], counter: ToolCounter) -> Any:
    """LangGraph's prebuilt ReAct agent (deprecated in favour of langchain.agents, still used)."""
    import warnings

    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(
            ScriptedChatModel(messages=script), make_tools(counter), name="prebuilt_agent"
        )


# -- priced turns: what a provider integration puts on each answer -----------------------

TURN_USAGE = {"input_tokens": 40, "output_tokens": 10, "total_tokens": 50}
ANSWER = "The Pro plan costs 20 EUR per month for up to 5 seats."
TOPICS = ("pricing", "limits", "refunds")


def priced_turn(content: str = "", *, finish: str = "stop", **fields: Any) -> AIMessage:
    """A turn as a provider integration returns it: usage, finish reason, model name."""
    return AIMessage(
        content=content,
        usage_metadata=dict(TURN_USAGE),
        response_metadata={"finish_reason": finish, "model_name": "scripted-1"},
        **fields,
    )


def priced_script() -> Iterator[AIMessage]:
    """Three distinct lookups, then the answer; every turn costs 40 + 10 tokens."""
    for index, topic in enumerate(TOPICS):
        yield priced_turn(
            finish="tool_calls",
            tool_calls=[{"name": "lookup", "args": {"topic": topic}, "id": f"call_{index}"}],
        )
    yield priced_turn(ANSWER)


class CountingChatModel(ScriptedChatModel):
    """The scripted model, counting the calls that reached it (the ones a provider bills).

    With ``report_below``, the turns of those indexes are reported to the guard from inside
    the call, as our OpenAI SDK instrumentation does below a ``ChatOpenAI``.
    """

    calls: int = 0
    report_below: frozenset[int] = frozenset()

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        index = self.calls
        self.calls += 1
        result = super()._generate(messages, *args, **kwargs)
        if index in self.report_below:
            usage = result.generations[0].message.usage_metadata or {}
            get_guard().observe_llm_response(
                model="scripted-1",
                input_tokens=usage.get("input_tokens"),
                output_tokens=usage.get("output_tokens"),
            )
        return result


class TokenStreamingChatModel(CountingChatModel):
    """A provider integration that streams token by token, shaped like OpenAI's with
    ``stream_usage``: text in words, each tool call's arguments in pieces, the finish
    reason on a chunk after the content, the usage on a final chunk of its own.

    ``closed`` is set when the caller stopped reading before the provider's stream ended;
    with ``report_below`` a turn is reported when its stream ends, as our OpenAI SDK
    package does below a streaming ``ChatOpenAI``.
    """

    closed: bool = False
    chunks_sent: int = 0
    argument_pieces: int = 2  # how many chunks each tool call's arguments arrive in

    def _stream(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        index = self.calls
        self.calls += 1
        # the scripted answer, without CountingChatModel's own report of it
        answer = GenericFakeChatModel._generate(self, messages, *args, **kwargs)
        message = answer.generations[0].message
        assert isinstance(message, AIMessage)
        finished = False
        try:
            for chunk in _chunks_of(message, self.argument_pieces):
                self.chunks_sent += 1
                yield ChatGenerationChunk(message=chunk)
            finished = True
        finally:
            self.closed = not finished
        if index in self.report_below:
            usage = message.usage_metadata or {}
            get_guard().observe_llm_response(
                model="scripted-1",
                input_tokens=usage.get("input_tokens"),
                output_tokens=usage.get("output_tokens"),
            )


def _chunks_of(message: AIMessage, argument_pieces: int = 2) -> Iterator[AIMessageChunk]:
    text = message.content
    assert isinstance(text, str)
    for word in re.split(r"(\s)", text) if text else ():
        yield AIMessageChunk(content=word)
    for position, call in enumerate(message.tool_calls):
        arguments = json.dumps(call["args"])
        size = -(-len(arguments) // argument_pieces)  # ceiling: at most that many pieces
        for start in range(0, len(arguments), size):
            piece, first = arguments[start : start + size], start == 0
            yield AIMessageChunk(
                content="",
                tool_call_chunks=[
                    {
                        "name": call["name"] if first else None,
                        "id": call["id"] if first else None,
                        "args": piece,
                        "index": position,
                    }
                ],
            )
    yield AIMessageChunk(content="", response_metadata=dict(message.response_metadata))
    yield AIMessageChunk(content="", usage_metadata=message.usage_metadata, chunk_position="last")


def streamed_answer(model: Any, messages: list[BaseMessage]) -> Any:
    answer = None
    for chunk in model.stream(messages):
        answer = chunk if answer is None else answer + chunk
    return answer
