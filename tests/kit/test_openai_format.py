"""kit.openai_format: what a Chat Completions or Responses answer says, read by duck typing
(plain dicts here, as some SDKs hand back), whole or folded from a stream."""

from __future__ import annotations

from otel_loopguard.kit.openai_format import (
    CHAT,
    RESPONSES,
    chat_span_attributes,
    chat_span_name,
    output_token_cap,
    parse_arguments,
)


def _chat_completion(finish: str = "tool_calls") -> dict:
    return {
        "id": "chatcmpl-1",
        "model": "gpt-test",
        "usage": {"prompt_tokens": 12, "completion_tokens": 5},
        "choices": [
            {
                "finish_reason": finish,
                "message": {
                    "content": None,
                    "tool_calls": [
                        {"function": {"name": "search", "arguments": '{"b": 2, "a": 1}'}},
                        {"function": {"name": "", "arguments": "{}"}},
                    ],
                },
            }
        ],
    }


def test_a_chat_completion_gives_usage_reasons_and_parsed_tool_calls() -> None:
    answer = CHAT.read(_chat_completion())
    assert (answer.response_id, answer.response_model) == ("chatcmpl-1", "gpt-test")
    assert (answer.input_tokens, answer.output_tokens) == (12, 5)
    assert answer.finish_reason == "tool_calls"
    assert answer.tool_calls == [("search", {"a": 1, "b": 2})]  # a nameless call is dropped
    assert not answer.empty


def test_an_empty_stop_is_the_premature_end_symptom() -> None:
    answer = CHAT.read({"choices": [{"finish_reason": "stop", "message": {"content": ""}}]})
    assert answer.empty and answer.finish_reason == "stop"
    assert answer.input_tokens is None and answer.response_id is None


def test_a_streamed_chat_answer_folds_to_the_same_answer() -> None:
    folder = CHAT.folder()
    chunks = [
        {"id": "c-1", "model": "gpt-test", "choices": [{"index": 0, "delta": {"content": "Hi"}}]},
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {"index": 0, "function": {"name": "search", "arguments": '{"q"'}}
                        ]
                    },
                }
            ]
        },
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": ': "x"}'}}]},
                    "finish_reason": "tool_calls",
                }
            ]
        },
        {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}},
    ]
    for chunk in chunks:
        folder.add(chunk)
    answer = folder.finish()
    assert answer.response_id == "c-1" and answer.has_text
    assert answer.tool_calls == [("search", {"q": "x"})]
    assert answer.finish_reasons == ["tool_calls"]
    assert (answer.input_tokens, answer.output_tokens) == (3, 4)


def _response(status: str = "completed", reason: str | None = None) -> dict:
    return {
        "id": "resp-1",
        "model": "gpt-test",
        "status": status,
        "incomplete_details": {"reason": reason} if reason else None,
        "usage": {"input_tokens": 9, "output_tokens": 2},
        "output": [
            {"type": "message", "content": [{"text": "partial"}]},
            {"type": "function_call", "name": "fetch", "arguments": '{"url": "u"}'},
        ],
    }


def test_a_responses_answer_speaks_chat_completions_finish_reasons() -> None:
    done = RESPONSES.read(_response())
    assert done.finish_reason == "tool_calls" and done.tool_calls == [("fetch", {"url": "u"})]
    assert (done.input_tokens, done.output_tokens) == (9, 2) and done.has_text
    cut = RESPONSES.read(_response("incomplete", "max_output_tokens"))
    assert cut.finish_reason == "length"  # the truncation detector's word for it
    assert RESPONSES.read(_response("failed")).finish_reason == "error"


def test_a_responses_stream_keeps_its_terminal_event() -> None:
    folder = RESPONSES.folder()
    folder.add({"type": "response.created", "response": {"id": "resp-1", "model": "m"}})
    folder.add({"type": "response.output_text.delta", "delta": "x"})
    assert folder.finish().tool_calls == []  # no terminal event yet: only the ids
    folder.add({"type": "response.completed", "response": _response()})
    assert folder.finish().tool_calls == [("fetch", {"url": "u"})]


def test_the_request_side_and_the_arguments() -> None:
    assert output_token_cap({"max_completion_tokens": 50, "max_tokens": 10}) == 50
    assert output_token_cap({"max_tokens": object()}) == 0  # an SDK sentinel is no number
    assert chat_span_name("m") == "chat m" and chat_span_name(None) == "chat"
    attributes = chat_span_attributes("openai", "m", {"temperature": 0.2, "top_p": True}, 50)
    assert attributes == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "m",
        "gen_ai.request.max_tokens": 50,
        "gen_ai.request.temperature": 0.2,
    }
    assert parse_arguments("") == {} and parse_arguments("not json") == "not json"
    assert parse_arguments({"a": 1}) == {"a": 1}
