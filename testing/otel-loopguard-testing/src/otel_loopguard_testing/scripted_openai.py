"""A scripted OpenAI API behind the SDK's own HTTP client.

This is the one stand-in in these tests, and only because the network cannot be reached
here: a ``MockTransport`` of the HTTP library the installed SDK uses (``httpx2`` for
openai 3.x, ``httpx`` for 2.x; ``http`` below is that library) answers each
request with the next scripted turn, in the JSON / server-sent-event shapes the real API
sends. Everything above the transport — the SDK's request building, retries, parsing and
streaming — is the real SDK. ``requests`` records every request that left the client, so
tests can assert that a vetoed call never reached the wire. :meth:`ScriptedAPI.serve` puts
the same script behind a loopback HTTP server, for clients a test cannot hand a transport.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import openai
import openai._base_client

# the SDK's own HTTP library: httpx2 (openai 3.x) or httpx (openai 2.x)
http: Any = getattr(openai._base_client, "httpx2", None) or openai._base_client.httpx


@dataclass
class Turn:
    """One scripted model answer."""

    text: str | None = None
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    finish_reason: str | None = None  # default: tool_calls if tool calls else stop
    input_tokens: int = 10
    output_tokens: int = 5

    @property
    def reason(self) -> str:
        return self.finish_reason or ("tool_calls" if self.tool_calls else "stop")


def budget_turns() -> list[Turn]:
    """Five turns, each a new search, of 15 + 5 tokens: a 45-token budget is reached at the
    third (see :func:`~.chat_loop.assert_third_request_vetoed_by_the_budget`)."""
    return [
        Turn(tool_calls=[("search", {"query": f"q{i}"})], input_tokens=15, output_tokens=5)
        for i in range(5)
    ]


def usage_turns(usage: list[tuple[int, int]]) -> list[Turn]:
    """A turn per ``(input, output)`` usage: new searches (``a``, ``b``, ...), the last one
    the answer, for checking the run's token totals."""
    *searches, (last_in, last_out) = usage
    turns = [
        Turn(tool_calls=[("search", {"query": query})], input_tokens=tokens_in, output_tokens=out)
        for query, (tokens_in, out) in zip("abcdefghij", searches, strict=False)
    ]
    return [*turns, Turn(text="answer", input_tokens=last_in, output_tokens=last_out)]


class ScriptedAPI:
    def __init__(self, turns: list[Turn], *, model: str = "gpt-test") -> None:
        self.turns = list(turns)
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self._ids = itertools.count(1)

    # -- transport -----------------------------------------------------------------
    def handle(self, request: http.Request) -> http.Response:
        body = json.loads(request.content or b"{}")
        self.requests.append({"path": request.url.path, **body})
        if not self.turns:
            return http.Response(500, json={"error": {"message": "script exhausted"}})
        turn = self.turns.pop(0)
        n = next(self._ids)
        responses_api = request.url.path.endswith("/responses")
        if body.get("stream"):
            events = self._response_events(turn, n) if responses_api else self._chunks(turn, n)
            data = "".join(f"data: {json.dumps(event)}\n\n" for event in events)
            if not responses_api:
                data += "data: [DONE]\n\n"
            return http.Response(
                200, content=data.encode(), headers={"content-type": "text/event-stream"}
            )
        payload = self._response(turn, n) if responses_api else self._completion(turn, n)
        return http.Response(200, json=payload)

    def client(self) -> openai.OpenAI:
        return self._client(openai.OpenAI, http.Client)

    def async_client(self) -> openai.AsyncOpenAI:
        return self._client(openai.AsyncOpenAI, http.AsyncClient)

    def _client(self, client_class: Any, http_client_class: Any) -> Any:
        """An SDK client whose HTTP client answers from the script (no retries)."""
        return client_class(
            api_key="test-key",
            base_url="http://llm.test/v1",
            http_client=http_client_class(transport=http.MockTransport(self.handle)),
            max_retries=0,
        )

    def serve(self) -> tuple[str, Callable[[], None]]:
        """The same script behind a real HTTP server on a loopback port, for a client the
        test cannot hand a transport (a framework that makes its own OpenAI client): the
        base URL to give it (``http://127.0.0.1:PORT/v1``) and a function that stops it."""
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                request = http.Request("POST", f"http://127.0.0.1{self.path}", content=body)
                response = api.handle(request)
                content = response.read()
                self.send_response(response.status_code)
                self.send_header("Content-Type", response.headers.get("content-type", ""))
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()

        def stop() -> None:
            server.shutdown()
            server.server_close()

        return f"http://127.0.0.1:{server.server_port}/v1", stop

    # -- Chat Completions ------------------------------------------------------------
    def _tool_calls(self, turn: Turn, n: int) -> list[dict[str, Any]]:
        return [
            {
                "id": f"call_{n}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for i, (name, args) in enumerate(turn.tool_calls)
        ]

    def _usage(self, turn: Turn) -> dict[str, int]:
        return {
            "prompt_tokens": turn.input_tokens,
            "completion_tokens": turn.output_tokens,
            "total_tokens": turn.input_tokens + turn.output_tokens,
        }

    def _completion(self, turn: Turn, n: int) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": turn.text}
        if turn.tool_calls:
            message["tool_calls"] = self._tool_calls(turn, n)
        return {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": 1,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": turn.reason}],
            "usage": self._usage(turn),
        }

    def _chunks(self, turn: Turn, n: int) -> list[dict[str, Any]]:
        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {
                "id": f"chatcmpl-{n}",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": self.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }

        chunks = [chunk({"role": "assistant", "content": ""})]
        if turn.text:
            half = len(turn.text) // 2
            chunks += [chunk({"content": turn.text[:half]}), chunk({"content": turn.text[half:]})]
        for i, call in enumerate(self._tool_calls(turn, n)):
            arguments = call["function"]["arguments"]
            chunks.append(
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": i,
                                "id": call["id"],
                                "type": "function",
                                "function": {"name": call["function"]["name"], "arguments": ""},
                            }
                        ]
                    }
                )
            )
            for part in (arguments[: len(arguments) // 2], arguments[len(arguments) // 2 :]):
                chunks.append(
                    chunk({"tool_calls": [{"index": i, "function": {"arguments": part}}]})
                )
        chunks.append(chunk({}, turn.reason))
        usage_chunk = chunk({})
        usage_chunk["choices"] = []
        usage_chunk["usage"] = self._usage(turn)
        chunks.append(usage_chunk)
        return chunks

    # -- Responses -----------------------------------------------------------------
    def _response(self, turn: Turn, n: int) -> dict[str, Any]:
        output: list[dict[str, Any]] = []
        if turn.text is not None:
            output.append(
                {
                    "type": "message",
                    "id": f"msg_{n}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
                }
            )
        for i, (name, args) in enumerate(turn.tool_calls):
            output.append(
                {
                    "type": "function_call",
                    "id": f"fc_{n}_{i}",
                    "call_id": f"call_{n}_{i}",
                    "name": name,
                    "arguments": json.dumps(args),
                    "status": "completed",
                }
            )
        truncated = turn.finish_reason in ("length", "max_tokens")
        return {
            "id": f"resp_{n}",
            "object": "response",
            "created_at": 1,
            "model": self.model,
            "status": "incomplete" if truncated else "completed",
            "incomplete_details": {"reason": "max_output_tokens"} if truncated else None,
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": turn.input_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": turn.output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": turn.input_tokens + turn.output_tokens,
            },
        }

    def _response_events(self, turn: Turn, n: int) -> list[dict[str, Any]]:
        final = self._response(turn, n)
        started = {**final, "status": "in_progress", "output": [], "usage": None}
        terminal = (
            "response.incomplete" if final["status"] == "incomplete" else "response.completed"
        )
        # the smallest valid stream: created, then the terminal event with the whole answer
        events: list[dict[str, Any]] = [
            {"type": "response.created", "sequence_number": 0, "response": started},
        ]
        events.append({"type": terminal, "sequence_number": len(events), "response": final})
        return events
