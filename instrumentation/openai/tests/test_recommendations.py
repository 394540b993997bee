"""Delivery: in enforce mode a replan's recommendation reaches the run's next request the
real SDK sends, once, where the API allows it; a truncated or empty answer is asked again
inside the caller's ``create``; observe mode sends every request as the loop built it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from agent_loop import TOOLS, loop_step, run_loop, run_tool
from conftest import TRACER
from otel_loopguard_testing.scripted_openai import ScriptedAPI, Turn

from otel_loopguard.engine.decisions import LoopGuardInterrupt
from otel_loopguard.guard import get_guard

NUDGE = "Act on what you found"
CONTINUE = "cut off at the output token limit"
REPROMPT = "You ended your turn without completing the task"
SHELL = "The shell command keeps failing with"
DELIVERED = "loopguard.recommendation.delivered"


class ListeningAPI(ScriptedAPI):
    """The scripted API, answering each request from ``answer(body)`` (what it was sent):
    a model that may change course on what it reads."""

    def __init__(self, answer: Callable[[dict[str, Any]], Turn]) -> None:
        super().__init__([])
        self.answer = answer

    def handle(self, request: Any) -> Any:
        self.turns = [self.answer(json.loads(request.content or b"{}"))]
        return super().handle(request)


def _texts(body: dict[str, Any]) -> list[str]:
    """The texts of a Chat Completions request's messages (or a Responses request's input)."""
    items = body.get("messages", body.get("input"))
    if isinstance(items, str):
        return [items]
    return [str(item.get("content") or item.get("output") or "") for item in items]


def _carrying(api: ScriptedAPI, text: str) -> list[int]:
    """The requests (their indices) with ``text`` in one of their messages."""
    return [i for i, body in enumerate(api.requests) if any(text in t for t in _texts(body))]


def _mentions(body: dict[str, Any], text: str) -> int:
    return sum(text in t for t in _texts(body))


def assert_valid_chat_position(body: dict[str, Any], text: str) -> None:
    """``text`` once, as the last message, a user message, and every assistant tool call is
    answered by its tool message right after the assistant message (the API's rule)."""
    messages = body["messages"]
    assert _mentions(body, text) == 1
    assert messages[-1]["role"] == "user" and text in messages[-1]["content"]
    for i, message in enumerate(messages):
        calls = [c["id"] for c in message.get("tool_calls") or ()]
        if calls:
            answers = messages[i + 1 : i + 1 + len(calls)]
            assert [m.get("tool_call_id") for m in answers] == calls


def _delivered_events(lg: Any) -> list[tuple[str, Any]]:
    return [
        (span.name, event.attributes["loopguard.detectors"])
        for span in lg.spans()
        for event in span.events
        if event.name == DELIVERED
    ]


async def run_async_loop(client: Any, *, turns: int = 12) -> Any:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test."}]
    with get_guard().agent_run(TRACER, "coder"):
        for _ in range(turns):
            completion = await client.chat.completions.create(
                model="gpt-test", messages=messages, tools=TOOLS
            )
            if not loop_step(messages, completion):
                return completion
    return None


def run_streamed_loop(client: Any, *, turns: int = 12) -> str | None:
    """The same loop reading streamed answers: it folds the chunks into one message."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test."}]
    with get_guard().agent_run(TRACER, "coder"):
        for _ in range(turns):
            text, calls = "", {}
            for chunk in client.chat.completions.create(
                model="gpt-test", messages=messages, tools=TOOLS, stream=True
            ):
                for choice in chunk.choices:
                    text += choice.delta.content or ""
                    for call in choice.delta.tool_calls or ():
                        entry = calls.setdefault(call.index, {"id": call.id, "name": "", "a": ""})
                        entry["name"] += call.function.name or ""
                        entry["a"] += call.function.arguments or ""
            tool_calls = [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": a}}
                for c in calls.values()
                for a in (c["a"],)
            ]
            messages.append({"role": "assistant", "content": text, "tool_calls": tool_calls})
            if not tool_calls:
                messages[-1].pop("tool_calls")
                return text
            for c in calls.values():
                output = run_tool(c["name"], json.loads(c["a"]), c["id"])
                messages.append({"role": "tool", "tool_call_id": c["id"], "content": output})
    return None


def reads_until_nudged(body: dict[str, Any]) -> Turn:
    if _mentions(body, NUDGE):
        return Turn(tool_calls=[("write_file", {"path": "fix.py"})])
    if any(m.get("role") == "tool" and "fix.py" in str(m.get("content")) for m in body["messages"]):
        return Turn(text="Fixed.")
    return Turn(tool_calls=[("read_file", {"path": f"f{len(body['messages'])}.py"})])


def reads_forever(body: dict[str, Any]) -> Turn:
    items = body.get("messages", body.get("input"))
    return Turn(tool_calls=[("read_file", {"path": f"f{len(items)}.py"})])


# -- 1. what the next request carries, and where --------------------------------------------


def test_the_read_only_nudge_reaches_the_next_request_once_and_the_model_that_listens_completes(
    make_loopguard,
):
    lg = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    api = ListeningAPI(reads_until_nudged)

    answer = run_loop(api.client())

    assert answer.choices[0].message.content == "Fixed."
    # the 3rd read-only step is judged when the 4th answer arrives: the 5th request has it
    assert _carrying(api, NUDGE) == [4]
    assert_valid_chat_position(api.requests[4], NUDGE)
    assert lg.run_state("coder") == "completed"
    assert not [d for d, _ in lg.decided if d.action.value == "stop"]
    # the span of the request that carried it says so
    chats = lg.spans("chat ")
    assert _delivered_events(lg) == [(chats[4].name, ("read_only_loop",))]
    assert [e.name for e in chats[4].events].count(DELIVERED) == 1


def test_a_model_that_ignores_the_nudge_is_stopped_saying_the_nudge_did_not_help(make_loopguard):
    lg = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    api = ListeningAPI(reads_forever)

    with pytest.raises(LoopGuardInterrupt) as stopped:
        run_loop(api.client(), turns=20)

    assert "the nudge did not help" in stopped.value.decision.reason
    assert stopped.value.decision.detectors == ("read_only_loop",)
    assert _carrying(api, NUDGE) == [4]  # delivered once, never repeated
    assert len(api.requests) == 7  # nudged after 3 reads, stopped when the 6th was judged
    assert lg.run_state("coder") == "stopped"


def test_the_shell_hint_follows_the_failing_command_results(make_loopguard):
    lg = make_loopguard(mode="enforce", shell_failure_threshold=2)

    def model(body: dict[str, Any]) -> Turn:
        if _mentions(body, SHELL):
            return Turn(text="pytest is not installed here; install it with pip first.")
        return Turn(tool_calls=[("bash", {"command": "pytest"})])

    api = ListeningAPI(model)
    answer = run_loop(api.client())

    assert answer.choices[0].message.content.startswith("pytest is not installed")
    assert _carrying(api, SHELL) == [2]  # after the 2nd failure's result
    assert_valid_chat_position(api.requests[2], SHELL)
    assert lg.run_state("coder") == "completed"


def test_a_truncated_answer_is_continued_inside_create_and_the_caller_gets_it_joined(
    make_loopguard,
):
    lg = make_loopguard(mode="enforce")
    api = ScriptedAPI(
        [
            Turn(text="The fix: first ", finish_reason="length", input_tokens=10, output_tokens=5),
            Turn(text="change utils.py.", input_tokens=20, output_tokens=4),
        ]
    )

    answer = run_loop(api.client(), max_tokens=5)

    assert answer.choices[0].message.content == "The fix: first change utils.py."
    assert answer.choices[0].finish_reason == "stop"
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (30, 9)
    assert answer.usage.total_tokens == 39
    assert len(api.requests) == 2
    follow_up = api.requests[1]["messages"]
    # the answer so far as the assistant's, then the continuation prompt
    assert follow_up[-2] == {"role": "assistant", "content": "The fix: first "}
    assert_valid_chat_position(api.requests[1], CONTINUE)
    assert lg.run_state("coder") == "completed"
    chats = lg.spans("chat ")
    assert len(chats) == 2
    assert _delivered_events(lg) == [(chats[1].name, ("truncation",))]


def test_truncations_are_continued_up_to_the_recoveries_then_the_joined_answer_ends_the_turn(
    make_loopguard,
):
    lg = make_loopguard(mode="enforce", max_tokens_recoveries=2)
    api = ScriptedAPI([Turn(text=f"part {i}. ", finish_reason="length") for i in range(6)])

    answer = run_loop(api.client())

    assert answer.choices[0].message.content == "part 0. part 1. part 2. "
    assert answer.choices[0].finish_reason == "length"  # the last part's
    assert len(api.requests) == 3
    assert [_mentions(body, CONTINUE) for body in api.requests] == [0, 1, 1]
    assert api.requests[2]["messages"][-2]["content"] == "part 0. part 1. "
    assert [d.action.value for d, _ in lg.decided] == ["replan", "replan", "warn"]
    assert lg.run_state("coder") == "completed"


def test_an_empty_give_up_after_a_failing_tool_is_asked_again_inside_create(make_loopguard):
    lg = make_loopguard(mode="enforce")

    def model(body: dict[str, Any]) -> Turn:
        if _mentions(body, REPROMPT):
            return Turn(text="I could not open the page: access is forbidden.")
        if any(m.get("role") == "tool" for m in body["messages"]):
            return Turn(text="")  # gives up silently
        return Turn(tool_calls=[("fetch", {"url": "https://example.test/pricing"})])

    api = ListeningAPI(model)
    answer = run_loop(api.client())

    assert answer.choices[0].message.content == "I could not open the page: access is forbidden."
    assert len(api.requests) == 3
    assert _carrying(api, REPROMPT) == [2]
    # the re-ask is the request the empty answer answered, plus the re-prompt after the
    # tool result: no empty assistant message in between
    assert api.requests[2]["messages"][:-1] == api.requests[1]["messages"]
    assert_valid_chat_position(api.requests[2], REPROMPT)
    assert lg.run_state("coder") == "completed"
    assert [d.detectors for d, _ in lg.decided if d.action.value == "replan"] == [
        ("premature_end",)
    ]


# -- 3. async and streamed --------------------------------------------------------------------


def test_async_client_delivers_and_re_asks_too(make_loopguard):
    lg = make_loopguard(mode="enforce", read_only_loop_threshold=3)

    def model(body: dict[str, Any]) -> Turn:
        if _mentions(body, CONTINUE):
            return Turn(text="done.")
        if _mentions(body, NUDGE):
            return Turn(text="The fix is ", finish_reason="length")
        return reads_forever(body)

    api = ListeningAPI(model)
    answer = asyncio.run(run_async_loop(api.async_client()))

    assert answer.choices[0].message.content == "The fix is done."
    # the nudge went once; the re-ask continues the loop's own request (which never held it)
    assert _carrying(api, NUDGE) == [4]
    assert_valid_chat_position(api.requests[4], NUDGE)
    assert_valid_chat_position(api.requests[5], CONTINUE)
    assert lg.run_state("coder") == "completed"


def test_a_streamed_request_carries_the_nudge_and_an_ignored_one_stops(make_loopguard):
    lg = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    api = ListeningAPI(reads_forever)

    with pytest.raises(LoopGuardInterrupt) as stopped:
        run_streamed_loop(api.client(), turns=20)

    assert "the nudge did not help" in stopped.value.decision.reason
    assert _carrying(api, NUDGE) == [4]
    assert api.requests[4]["stream"] is True
    assert_valid_chat_position(api.requests[4], NUDGE)
    assert len(api.requests) == 7
    assert lg.run_state("coder") == "stopped"


def test_a_truncated_stream_is_not_re_asked_its_continuation_goes_into_the_next_request(
    make_loopguard,
):
    lg = make_loopguard(mode="enforce")
    api = ScriptedAPI([Turn(text="part one ", finish_reason="length"), Turn(text="part two")])
    client = api.client()
    messages = [{"role": "user", "content": "write the report"}]

    with get_guard().agent_run(TRACER, "writer"):
        first = client.chat.completions.create(model="gpt-test", messages=messages, stream=True)
        text = "".join(c.choices[0].delta.content or "" for c in first if c.choices)
        assert text == "part one "
        assert len(api.requests) == 1  # the stream was the caller's; no re-ask inside it
        messages.append({"role": "assistant", "content": text})
        second = client.chat.completions.create(model="gpt-test", messages=messages, stream=True)
        assert "".join(c.choices[0].delta.content or "" for c in second if c.choices)

    assert_valid_chat_position(api.requests[1], CONTINUE)
    assert messages == [messages[0], {"role": "assistant", "content": "part one "}]
    assert lg.run_state("writer") == "completed"


# -- the Responses API ------------------------------------------------------------------------


def test_responses_input_carries_the_nudge_after_the_function_call_outputs(make_loopguard):
    lg = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    api = ListeningAPI(reads_forever)
    client = api.client()
    items: list[Any] = [{"role": "user", "content": "Fix the failing test."}]

    with pytest.raises(LoopGuardInterrupt) as stopped:
        with get_guard().agent_run(TRACER, "coder"):
            for _ in range(20):
                response = client.responses.create(model="gpt-test", input=items)
                for item in response.output:
                    items.append(item.model_dump(exclude_none=True))
                    if item.type == "function_call":
                        output = run_tool(item.name, json.loads(item.arguments), item.call_id)
                        result = {"call_id": item.call_id, "output": output}
                        items.append({"type": "function_call_output", **result})

    assert "the nudge did not help" in stopped.value.decision.reason
    assert _carrying(api, NUDGE) == [4]
    carried = api.requests[4]["input"]
    assert _mentions(api.requests[4], NUDGE) == 1
    assert carried[-1] == {"role": "user", "content": carried[-1]["content"]}
    assert carried[-2]["type"] == "function_call_output"
    assert lg.run_state("coder") == "stopped"
    assert not any(NUDGE in str(item) for item in items)  # the caller's list as it was


# -- 4. observe mode, and the off switch --------------------------------------------------------


@pytest.mark.parametrize(
    "settings",
    [{"mode": "observe"}, {"mode": "enforce", "deliver_recommendations": False}],
    ids=["observe", "delivery-off"],
)
def test_without_delivery_every_request_goes_as_the_loop_built_it(make_loopguard, settings):
    lg = make_loopguard(read_only_loop_threshold=3, **settings)
    api = ListeningAPI(reads_forever)

    run_loop(api.client(), turns=10)

    assert len(api.requests) == 10
    for i, body in enumerate(api.requests):
        # the user's task, then one assistant message and one tool result per step
        assert len(body["messages"]) == 1 + 2 * i
        assert [m["role"] for m in body["messages"]].count("user") == 1
    assert any(d.action.value == "replan" for d, _ in lg.decided)
    assert _delivered_events(lg) == []


def test_observe_mode_never_re_asks_a_truncated_answer(make_loopguard):
    make_loopguard(mode="observe")
    api = ScriptedAPI([Turn(text="part one ", finish_reason="length"), Turn(text="part two")])

    answer = run_loop(api.client())

    assert answer.choices[0].message.content == "part one "
    assert len(api.requests) == 1
