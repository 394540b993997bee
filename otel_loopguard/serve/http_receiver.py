"""OTLP/HTTP receiver (aiohttp): ``POST /v1/traces`` (protobuf or JSON, gzip) and
``GET /health``, on its own asyncio loop in a thread.

The declared ``Content-Length`` is checked before a byte of the body is read (413), and
aiohttp's own ``client_max_size`` stops a chunked body at the same limit; at most
``max_in_flight`` bodies are read at once. Refused for capacity (too many bodies in flight,
or too many spans pending): 429 with ``Retry-After``, which the OTLP exporters honour;
while draining: 503.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from otel_loopguard.serve.decode import success_response
from otel_loopguard.serve.intake import Intake, Outcome
from otel_loopguard.serve.settings import RETRY_AFTER_SECONDS

if TYPE_CHECKING:
    from aiohttp import web

_STATUS = {
    Outcome.OK: 200,
    Outcome.MALFORMED: 400,
    Outcome.UNAUTHORIZED: 401,
    Outcome.TOO_LARGE: 413,
    Outcome.BUSY: 429,
    Outcome.DRAINING: 503,
}


class HTTPReceiver:
    def __init__(
        self,
        intake: Intake,
        host: str,
        port: int,
        health: Callable[[], tuple[bool, dict[str, Any]]],
        ssl_context: ssl.SSLContext | None = None,
        max_in_flight: int = 32,
    ) -> None:
        # imported here: the module imports without the [serve] extra (the package's
        # modules all import with only the core's dependencies)
        from aiohttp import web as aiohttp_web

        self._web = aiohttp_web
        self.intake = intake
        self.host = host
        self.port = port
        self._health = health
        self._ssl = ssl_context
        #: bodies being read at once: each holds up to max_request_bytes, so their number
        #: bounds the memory requests take before they are judged
        self.max_in_flight = max_in_flight
        self._in_flight = 0
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="loopguard-http", daemon=True
        )

    def start(self) -> int:
        """Listen; returns the port (the one the system chose for port 0)."""
        self._thread.start()
        return asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(30)

    async def _start(self) -> int:
        web = self._web
        app = web.Application(client_max_size=self.intake.max_request_bytes)
        app.router.add_post("/v1/traces", self._traces)
        app.router.add_get("/health", self._health_check)
        # auto_decompress off: the body is inflated by decode.inflate, bounded by the limit
        self._runner = web.AppRunner(
            app, access_log=None, handle_signals=False, auto_decompress=False
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=self._ssl)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or ()
        return int(sockets[0].getsockname()[1]) if sockets else self.port

    def stop(self) -> None:
        """Stop listening, finish the requests in flight, end the loop."""
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)

    async def _traces(self, request: web.Request) -> web.Response:
        intake = self.intake
        json_body = "json" in (request.content_type or "")
        if not intake.authorized(request.headers.get("Authorization")):
            return self._answer(intake.count("http", Outcome.UNAUTHORIZED), json_body)
        declared = request.content_length
        if declared is not None and declared > intake.max_request_bytes:
            return self._answer(intake.count("http", Outcome.TOO_LARGE), json_body)
        if self._in_flight >= self.max_in_flight:
            return self._answer(intake.count("http", Outcome.BUSY), json_body)
        self._in_flight += 1  # the event loop's one thread: no lock needed
        try:
            body = await request.read()
        except self._web.HTTPRequestEntityTooLarge:
            return self._answer(intake.count("http", Outcome.TOO_LARGE), json_body)
        finally:
            self._in_flight -= 1
        outcome, rejected = intake.body(
            "http", body, request.headers.get("Content-Encoding", ""), request.content_type or ""
        )
        return self._answer(outcome, json_body, rejected)

    def _answer(self, outcome: Outcome, json_body: bool, rejected: int = 0) -> web.Response:
        status = _STATUS[outcome]
        headers = {}
        if outcome is Outcome.UNAUTHORIZED:
            headers["WWW-Authenticate"] = "Bearer"
        if outcome is Outcome.BUSY or outcome is Outcome.DRAINING:
            headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
        if outcome is Outcome.TOO_LARGE:
            headers["Connection"] = "close"  # the unread rest of the body is not wanted
        if status == 200:
            kind = "application/json" if json_body else "application/x-protobuf"
            answer = success_response(rejected, json_body)
            return self._web.Response(body=answer, content_type=kind)
        return self._web.Response(status=status, text=outcome.value, headers=headers)

    async def _health_check(self, _request: web.Request) -> web.Response:
        serving, details = self._health()
        return self._web.Response(
            status=200 if serving else 503,
            text=json.dumps(details),
            content_type="application/json",
        )
