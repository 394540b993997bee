"""A replan's recommendation in the next Messages request, through the real SDK client.

The hand-written tool-use agent of ``agents.py`` drives the real ``anthropic`` client over
the scripted HTTP API; every request body is recorded as the SDK serialised it. In
``enforce`` mode the recommendation must reach the model once, as a text block after the
``tool_result`` blocks of the trailing user turn (or in a user turn of its own after an
assistant turn), in a conversation the API accepts; a model that acts on it finishes, one
that ignores it is stopped. A truncated or empty non-streamed answer is asked again at
once and the caller gets the joined answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from typing import Any

import pytest
from agents import MODEL, QUESTION, ToolBox, gives_up_silently, run_agent, run_agent_async
from scripted_api import Reply, ScriptedMessagesAPI

from otel_loopguard import LoopGuardInterrupt
from otel_loopguard.guard.decorators import agent_run, tool_span

READ_ONLY_NUDGE = "Act on what you found"
CONTINUATION = "cut off at the output token limit"
REPROMPT = "You ended your turn without completing the task"
SHELL_HINT = "The shell command keeps failing"
ALL_HINTS = (READ_ONLY_NUDGE, CONTINUATION, REPROMPT, SHELL_HINT)
DELIVERED = "loopguard.recommendation.delivered"


# -- the agent's tools and models --------------------------------------------------------------


class Files(ToolBox):
    """``read_file`` returns something new for every path: reading, never acting."""

    def run(self, name: str, arguments: dict[str, Any]) -> str:
        self.calls[name] = self.calls.get(name, 0) + 1
        if name == "bash":
            return "bash: pytest: command not found"
        return f"contents of {arguments.get('path')}: line {self.calls[name]}"


def _said(messages: list[dict[str, Any]], text: str) -> bool:
    return text in str(messages)


def _steps(messages: list[dict[str, Any]]) -> int:
    return sum(1 for m in messages if m["role"] == "assistant")


def reads(until: str | None = None) -> Any:
    """A model that reads another file every turn; with ``until``, answers once it sees it."""

    def reply(messages: list[dict[str, Any]]) -> Reply:
        if until is not None and _said(messages, until):
            return Reply(text="The bug is in utils.py; here is the fix.")
        return Reply(tool_calls=[("read_file", {"path": f"src/f{_steps(messages)}.py"})])

    return reply


def runs_pytest(until: str | None = None) -> Any:
    """A model that runs pytest again and again; with ``until``, answers once it sees it."""

    def reply(messages: list[dict[str, Any]]) -> Reply:
        if until is not None and _said(messages, until):
            return Reply(text="pytest is not installed here; install it with pip first.")
        return Reply(tool_calls=[("bash", {"command": f"pytest -x tests/t{_steps(messages)}"})])

    return reply


def cut_once(messages: list[dict[str, Any]]) -> Reply:
    """Runs into the token limit, then continues when told it was cut off."""
    if _said(messages, CONTINUATION):
        return Reply(text="20 EUR per month.")
    return Reply(text="The Pro plan costs ", stop_reason="max_tokens", output_tokens=1024)


def answers_when_reprompted(messages: list[dict[str, Any]]) -> Reply:
    """One failing lookup, an empty end of turn, and an explanation once re-prompted."""
    if _said(messages, REPROMPT):
        return Reply(text="The catalog is offline: the price cannot be looked up now.")
    return gives_up_silently()(messages)


# -- what the API accepts ----------------------------------------------------------------------


def assert_valid_conversation(messages: list[dict[str, Any]]) -> None:
    """The Messages API's rules: starts with the user, turns alternate, a user turn after
    tool calls answers each of them with ``tool_result`` blocks that come first."""
    assert messages[0]["role"] == "user"
    for before, after in itertools.pairwise(messages):
        assert before["role"] != after["role"], "two turns of one role in a row"
    for before, after in itertools.pairwise(messages):
        asked = [b["id"] for b in _blocks(before) if b.get("type") == "tool_use"]
        if not asked:
            continue
        kinds = [b.get("type") for b in _blocks(after)]
        answered = [b["tool_use_id"] for b in _blocks(after) if b.get("type") == "tool_result"]
        assert answered == asked
        assert kinds[: len(asked)] == ["tool_result"] * len(asked), "tool results come first"


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def carrying(api: ScriptedMessagesAPI, text: str) -> list[int]:
    """The indexes of the requests that carry ``text``."""
    return [i for i, body in enumerate(api.requests) if _said(body["messages"], text)]


def assert_delivered_last(body: dict[str, Any], text: str) -> None:
    """``text`` once, as the last text block of the request's trailing user turn, after its
    tool results; the whole conversation valid."""
    messages = body["messages"]
    assert_valid_conversation(messages)
    last = messages[-1]
    assert last["role"] == "user"
    blocks = _blocks(last)
    assert blocks[-1]["type"] == "text" and text in blocks[-1]["text"]
    assert str(messages).count(text) == 1


def delivered_events(guard: Any) -> list[Any]:
    return [(s, e) for s in guard.spans() for e in s.events if e.name == DELIVERED]


def _run(api: ScriptedMessagesAPI, tools: ToolBox, *, stream: bool, flavour: str) -> Any:
    if flavour == "async":
        return asyncio.run(run_agent_async(api.async_client(), tools, stream=stream))
    return run_agent(api.client(), tools, stream=stream)


# -- delivery ----------------------------------------------------------------------------------


@pytest.mark.parametrize("flavour", ["sync", "async"])
@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_the_read_only_nudge_reaches_the_next_request_once_and_the_agent_finishes(
    make_loopguard: Any, stream: bool, flavour: str
) -> None:
    guard = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    api = ScriptedMessagesAPI(reads(until=READ_ONLY_NUDGE))
    tools = Files()

    result = _run(api, tools, stream=stream, flavour=flavour)

    assert result.answer.startswith("The bug is in utils.py")
    assert carrying(api, READ_ONLY_NUDGE) == [len(api.requests) - 1]
    body = api.requests[-1]
    assert_delivered_last(body, READ_ONLY_NUDGE)
    assert _blocks(body["messages"][-1])[0]["type"] == "tool_result"
    assert tools["read_file"] == 4  # the 3rd read-only step is judged when the 4th turn asks
    (agent,) = guard.agent_spans()
    assert agent.attributes["loopguard.run.state"] == "completed"
    assert not [d for d, _ in guard.decided if d.action.value == "stop"]
    guard.assert_every_span_ended_once()


@pytest.mark.parametrize("sdk_tracing", [True, False], ids=["sdk-spans", "own-spans"])
def test_the_delivery_is_recorded_on_the_chat_span_of_the_request(
    make_loopguard: Any, sdk_tracing: bool
) -> None:
    guard = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    api = ScriptedMessagesAPI(reads(until=READ_ONLY_NUDGE))
    run_agent(api.client(sdk_tracing=sdk_tracing), Files())

    ((span, event),) = delivered_events(guard)
    assert span.attributes.get("gen_ai.operation.name") == "chat"
    assert event.attributes["loopguard.detectors"] == ("read_only_loop",)
    assert READ_ONLY_NUDGE in event.attributes["loopguard.recommendation"]
    assert span.attributes["loopguard.recommendation.detector"] == "read_only_loop"
    chats = [s for s in guard.spans() if s.attributes.get("gen_ai.operation.name") == "chat"]
    assert span is chats[-1], "the last request carried it"


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_a_model_that_ignores_the_nudge_is_stopped_saying_so(
    make_loopguard: Any, stream: bool
) -> None:
    guard = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    api = ScriptedMessagesAPI(reads())
    tools = Files()

    with pytest.raises(LoopGuardInterrupt) as raised:
        run_agent(api.client(), tools, stream=stream)

    decision = raised.value.decision
    assert "the nudge did not help" in decision.reason
    assert decision.detectors == ("read_only_loop",)
    # one request carried it (the agent's history is its own: the next ones do not)
    (nudged,) = carrying(api, READ_ONLY_NUDGE)
    assert_delivered_last(api.requests[nudged], READ_ONLY_NUDGE)
    assert nudged == 4
    # nudged after 3 read-only steps, stopped when the 6th was judged: no 7th read
    assert len(api.requests) == 7
    assert tools["read_file"] == 6
    (agent,) = guard.agent_spans()
    assert agent.attributes["loopguard.run.state"] == "stopped"
    guard.assert_every_span_ended_once()


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_the_shell_hint_reaches_the_next_request_and_a_listening_model_finishes(
    make_loopguard: Any, stream: bool
) -> None:
    guard = make_loopguard(mode="enforce", shell_failure_threshold=2)
    api = ScriptedMessagesAPI(runs_pytest(until=SHELL_HINT))
    tools = Files()

    result = run_agent(api.client(), tools, stream=stream)

    assert result.answer.startswith("pytest is not installed")
    assert tools["bash"] == 2
    assert carrying(api, SHELL_HINT) == [2]
    assert_delivered_last(api.requests[2], SHELL_HINT)
    (agent,) = guard.agent_spans()
    assert agent.attributes["loopguard.run.state"] == "completed"


def test_a_shell_failure_that_goes_on_after_the_hint_is_stopped(make_loopguard: Any) -> None:
    make_loopguard(mode="enforce", shell_failure_threshold=2)
    api = ScriptedMessagesAPI(runs_pytest())
    tools = Files()

    with pytest.raises(LoopGuardInterrupt) as raised:
        run_agent(api.client(), tools)

    assert raised.value.decision.detectors == ("shell_failure",)
    assert "the nudge did not help" in raised.value.decision.reason
    assert tools["bash"] == 4  # the hint after 2 failures, the stop at the 4th
    assert carrying(api, SHELL_HINT)[0] == 2


# -- the re-asks -------------------------------------------------------------------------------


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_a_truncated_answer_is_continued_and_the_caller_gets_one_message(
    make_loopguard: Any, flavour: str
) -> None:
    guard = make_loopguard(mode="enforce")
    api = ScriptedMessagesAPI(cut_once)
    request = {"model": MODEL, "max_tokens": 1024, "messages": [{"role": "user", "content": "?"}]}

    async def ask_async() -> Any:
        with agent_run("writer"):
            return await api.async_client().messages.create(**request)

    if flavour == "async":
        answer = asyncio.run(ask_async())
    else:
        with agent_run("writer"):
            answer = api.client().messages.create(**request)

    assert [b.type for b in answer.content] == ["text"]
    assert answer.content[0].text == "The Pro plan costs 20 EUR per month."
    assert answer.stop_reason == "end_turn"
    assert answer.usage.output_tokens == 1024 + 20
    assert answer.usage.input_tokens == 200
    assert request["messages"] == [{"role": "user", "content": "?"}], "the caller's request"
    assert len(api.requests) == 2
    continued = api.requests[1]["messages"]
    assert continued[:2] == [
        {"role": "user", "content": "?"},
        {"role": "assistant", "content": [{"type": "text", "text": "The Pro plan costs "}]},
    ]
    assert_delivered_last(api.requests[1], CONTINUATION)
    (agent,) = guard.agent_spans()
    assert agent.attributes["loopguard.run.state"] == "completed"


def test_the_agent_loop_never_sees_the_truncation_it_was_spared(make_loopguard: Any) -> None:
    make_loopguard(mode="enforce")
    api = ScriptedMessagesAPI(cut_once)

    result = run_agent(api.client(), ToolBox())

    assert result.answer == "The Pro plan costs 20 EUR per month."
    assert result.stop_reasons == ["end_turn"]
    assert result.turns == 1


def test_truncations_past_the_recoveries_end_the_turn_with_the_joined_text(
    make_loopguard: Any,
) -> None:
    make_loopguard(mode="enforce", max_tokens_recoveries=2)
    api = ScriptedMessagesAPI(
        lambda messages: Reply(text="more ", stop_reason="max_tokens", output_tokens=1024)
    )
    with agent_run("writer"):
        answer = api.client().messages.create(
            model=MODEL, max_tokens=1024, messages=[{"role": "user", "content": "?"}]
        )
    assert len(api.requests) == 3
    assert answer.content[0].text == "more more more "
    assert answer.stop_reason == "max_tokens"
    for body in api.requests[1:]:
        assert_delivered_last(body, CONTINUATION)


def test_a_streamed_truncation_is_continued_by_the_agent_loop_with_the_prompt(
    make_loopguard: Any,
) -> None:
    """No re-ask inside a stream: the agent's own loop sends "Continue.", and the
    continuation prompt goes into that user turn, after its text."""
    make_loopguard(mode="enforce")
    api = ScriptedMessagesAPI(cut_once)

    result = run_agent(api.client(), ToolBox(), stream=True)

    assert result.stop_reasons == ["max_tokens", "end_turn"]
    assert carrying(api, CONTINUATION) == [1]
    body = api.requests[1]
    assert_delivered_last(body, CONTINUATION)
    assert _blocks(body["messages"][-1])[0] == {"type": "text", "text": "Continue."}


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_an_empty_give_up_after_a_failed_tool_is_re_prompted(
    make_loopguard: Any, flavour: str
) -> None:
    guard = make_loopguard(mode="enforce")
    api = ScriptedMessagesAPI(answers_when_reprompted)

    result = _run(api, ToolBox(fail=True), stream=False, flavour=flavour)

    assert result.answer.startswith("The catalog is offline")
    assert len(api.requests) == 3
    assert carrying(api, REPROMPT) == [2]
    body = api.requests[2]
    assert body["messages"][:-1] == api.requests[1]["messages"][:-1], "no empty assistant turn"
    assert_delivered_last(body, REPROMPT)
    failed = _blocks(body["messages"][-1])[0]
    assert failed["type"] == "tool_result" and failed["is_error"] is True
    (agent,) = guard.agent_spans()
    assert agent.attributes["loopguard.run.state"] == "completed"


def test_a_model_that_keeps_giving_up_is_stopped_after_the_re_prompts(
    make_loopguard: Any,
) -> None:
    make_loopguard(mode="enforce", max_premature_end_recoveries=2)
    api = ScriptedMessagesAPI(gives_up_silently())

    with pytest.raises(LoopGuardInterrupt) as raised:
        run_agent(api.client(), ToolBox(fail=True))

    assert "premature_end" in raised.value.decision.detectors
    assert carrying(api, REPROMPT) == [2, 3]
    assert all(str(api.requests[i]["messages"]).count(REPROMPT) == 1 for i in (2, 3))


# -- observe mode and the off switch ---------------------------------------------------------


@pytest.mark.parametrize("settings", [{"mode": "observe"}, {"deliver_recommendations": False}])
@pytest.mark.parametrize(
    ("script", "tools"),
    [
        (reads(), Files),
        (runs_pytest(), Files),
        (gives_up_silently(), lambda: ToolBox(fail=True)),
        (
            lambda m: (
                Reply(text="cut ", stop_reason="max_tokens")
                if _steps(m) < 3
                else Reply(text="done")
            ),
            ToolBox,
        ),
    ],
    ids=["read-only", "shell", "premature-end", "truncation"],
)
def test_requests_are_left_as_the_agent_wrote_them(
    make_loopguard: Any, settings: dict[str, Any], script: Any, tools: Any
) -> None:
    baseline = ScriptedMessagesAPI(script)
    run_agent(baseline.client(), tools(), max_turns=8)

    config = {"mode": "enforce", **settings}
    guard = make_loopguard(read_only_loop_threshold=3, shell_failure_threshold=2, **config)
    api = ScriptedMessagesAPI(script)
    with contextlib.suppress(LoopGuardInterrupt):  # a stop still stops with delivery off
        run_agent(api.client(), tools(), max_turns=8)

    assert any(d.action.value == "replan" for d, _ in guard.decided)
    assert not any(_said(body["messages"], hint) for body in api.requests for hint in ALL_HINTS)
    assert api.requests == baseline.requests[: len(api.requests)]
    assert not delivered_events(guard)


def test_the_callers_history_is_never_changed(make_loopguard: Any) -> None:
    make_loopguard(mode="enforce", read_only_loop_threshold=3)
    api = ScriptedMessagesAPI(reads(until=READ_ONLY_NUDGE))
    client = api.client()
    history: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    with agent_run("coder"):
        for step in range(6):
            message = client.messages.create(model=MODEL, max_tokens=256, messages=history)
            history.append(
                {"role": "assistant", "content": [b.model_dump() for b in message.content]}
            )
            if message.stop_reason != "tool_use":
                break
            (call,) = [b for b in message.content if b.type == "tool_use"]
            with tool_span(call.name, call.input, call_id=call.id) as span:
                span.set_result(f"x{step}")
            results = [{"type": "tool_result", "tool_use_id": call.id, "content": f"x{step}"}]
            history.append({"role": "user", "content": results})
    assert not _said(history, READ_ONLY_NUDGE)
    assert _said(api.requests[-1]["messages"], READ_ONLY_NUDGE)
    assert all(isinstance(m["content"], (str, list)) for m in history)


def test_the_sdk_tool_runner_gets_the_joined_answer_of_a_truncated_turn(
    make_loopguard: Any,
) -> None:
    """The SDK's own agent loop (beta tool runner) ends on an answer without tool calls: the
    truncated one is continued inside its request, and the runner's last message is whole."""
    from anthropic import beta_tool

    make_loopguard(mode="enforce")
    api = ScriptedMessagesAPI(cut_once)

    @beta_tool
    def search(query: str) -> str:
        """Search the product knowledge base."""
        return "no results"

    with agent_run("runner"):
        last = (
            api.client()
            .beta.messages.tool_runner(
                model=MODEL,
                max_tokens=256,
                tools=[search],
                messages=[{"role": "user", "content": QUESTION}],
            )
            .until_done()
        )

    assert "".join(b.text for b in last.content) == "The Pro plan costs 20 EUR per month."
    assert len(api.requests) == 2
    assert_delivered_last(api.requests[1], CONTINUATION)
