"""A scripted stand-in for the Anthropic Messages HTTP API, plugged in as the SDK's transport.

This is the one mock in these tests, and only because the network cannot be reached here:
the real SDK client (``anthropic.Anthropic`` / ``AsyncAnthropic``) builds, sends, retries,
parses and streams exactly as in production, over ``httpx2.MockTransport``, which answers
each request from a script instead of api.anthropic.com. Every request body is recorded, so
tests can assert that a vetoed request never left the process.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx2


@dataclass
class Reply:
    """One scripted model turn."""

    text: str = ""
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    stop_reason: str | None = None  # default: tool_use with tool calls, else end_turn
    input_tokens: int = 100
    output_tokens: int = 20

    def message(self, model: str, message_id: str, call_ids: Iterable[str]) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if self.text:
            content.append({"type": "text", "text": self.text})
        for (name, arguments), call_id in zip(self.tool_calls, call_ids, strict=False):
            content.append({"type": "tool_use", "id": call_id, "name": name, "input": arguments})
        stop = self.stop_reason or ("tool_use" if self.tool_calls else "end_turn")
        return {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens},
        }


Script = Callable[[list[dict[str, Any]]], Reply]


class ScriptedMessagesAPI:
    """Answers ``POST /v1/messages`` with the reply the script gives for the conversation."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self._ids = itertools.count(1)

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        reply = self.script(body["messages"])
        number = next(self._ids)
        message = reply.message(
            body["model"], f"msg_{number:04d}", (f"toolu_{number:04d}_{i}" for i in range(99))
        )
        if body.get("stream"):
            return httpx2.Response(
                200,
                content=_sse(message).encode(),
                headers={"content-type": "text/event-stream"},
            )
        return httpx2.Response(200, json=message)

    def client(self, *, sdk_tracing: bool = True) -> anthropic.Anthropic:
        return self._client(anthropic.Anthropic, httpx2.Client, sdk_tracing)

    def async_client(self, *, sdk_tracing: bool = True) -> anthropic.AsyncAnthropic:
        return self._client(anthropic.AsyncAnthropic, httpx2.AsyncClient, sdk_tracing)

    def _client(self, client_class: Any, http_client_class: Any, sdk_tracing: bool) -> Any:
        """An SDK client whose HTTP client answers from the script (no retries); with
        ``sdk_tracing`` off, the SDK's own OpenTelemetry spans are turned off."""
        return client_class(
            api_key="test-key",
            http_client=http_client_class(transport=httpx2.MockTransport(self.handle)),
            open_telemetry=None if sdk_tracing else False,
            max_retries=0,
        )


def _sse(message: dict[str, Any]) -> str:
    """The server-sent events the API streams for ``message``."""
    start = {**message, "content": [], "stop_reason": None}
    start["usage"] = {"input_tokens": message["usage"]["input_tokens"], "output_tokens": 1}
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            opening = {"type": "text", "text": ""}
            words = block["text"].split(" ")
            deltas = [
                {"type": "text_delta", "text": word + (" " if i < len(words) - 1 else "")}
                for i, word in enumerate(words)
            ]
        else:
            opening = {**block, "input": {}}
            encoded = json.dumps(block["input"])
            middle = len(encoded) // 2
            deltas = [
                {"type": "input_json_delta", "partial_json": part}
                for part in (encoded[:middle], encoded[middle:])
            ]
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opening},
            )
        )
        for delta in deltas:
            events.append(
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": message["usage"]["output_tokens"]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
