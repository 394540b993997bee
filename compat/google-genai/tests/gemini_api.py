"""A scripted stand-in for the Gemini API's ``generateContent`` on a loopback port, for the
real ``google-genai`` client (``http_options.base_url``): the one stand-in, the network being
out of reach. Each request is answered from a script of the conversation so far (a function
call, or a text answer), with the usage a Gemini response reports; every request body is
kept."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PROMPT_TOKENS = 40
CANDIDATE_TOKENS = 10


@dataclass
class Reply:
    """One model turn: a text, or function calls ``(name, args)``."""

    text: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


Script = Callable[[list[dict[str, Any]]], Reply]


class GeminiAPI:
    """``with GeminiAPI(script) as api:`` serves on ``api.base_url`` until the block ends."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(body)
        reply = self.script(body.get("contents", []))
        if reply.calls:
            parts = [{"functionCall": {"name": n, "args": a}} for n, a in reply.calls]
        else:
            parts = [{"text": reply.text}]
        return {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
            "usageMetadata": {
                "promptTokenCount": PROMPT_TOKENS,
                "candidatesTokenCount": CANDIDATE_TOKENS,
                "totalTokenCount": PROMPT_TOKENS + CANDIDATE_TOKENS,
            },
            "modelVersion": "gemini-scripted",
            "responseId": f"resp-{next(self._ids)}",
        }

    def __enter__(self) -> GeminiAPI:
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                payload = json.dumps(api.answer(body)).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __exit__(self, *exc: Any) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


def function_responses(contents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The function responses the conversation holds so far (the tools' answers)."""
    return [
        part["functionResponse"]
        for content in contents
        for part in content.get("parts", [])
        if "functionResponse" in part
    ]
