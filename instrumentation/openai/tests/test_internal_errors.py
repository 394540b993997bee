"""Our own failures never reach the program: the SDK's answer still comes back."""

from __future__ import annotations

from conftest import TRACER
from otel_loopguard_testing.scripted_openai import ScriptedAPI, http

from otel_loopguard.guard import get_guard


def test_an_answer_we_cannot_read_is_still_returned(make_loopguard):
    lg = make_loopguard(mode="enforce")
    odd = {
        "id": "chatcmpl-odd",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-test",
        "choices": [{"index": 0, "message": None, "finish_reason": "stop"}],
    }
    client = ScriptedAPI([]).client()
    client._client._transport = http.MockTransport(lambda request: http.Response(200, json=odd))

    with get_guard().agent_run(TRACER, "assistant"):
        completion = client.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "x"}]
        )

    assert completion.id == "chatcmpl-odd"
    (chat,) = lg.spans("chat ")
    assert "error.type" not in chat.attributes
    assert lg.open_spans() == []
