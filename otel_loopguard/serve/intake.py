"""What both receivers do with a request: check, decode, admit, count.

A request is answered by one :class:`Outcome` (and, when it is accepted, by how many of its
spans were rejected: OTLP's partial success), which each transport turns into its own
status (HTTP 200/400/401/413/429/503, gRPC OK/INVALID_ARGUMENT/UNAUTHENTICATED/
RESOURCE_EXHAUSTED/UNAVAILABLE). Every outcome is counted in
``loopguard.serve.requests{transport, outcome}`` and the spans in
``loopguard.serve.spans{outcome}``; a malformed body is an answer, never an exception out
of a handler, and nothing of its content is logged.
"""

from __future__ import annotations

import enum
import hmac
from collections.abc import Callable

from opentelemetry import metrics

from otel_loopguard.serve.decode import (
    Decoded,
    MalformedRequest,
    TooLarge,
    decode_json,
    decode_protobuf,
    inflate,
)
from otel_loopguard.serve.pipeline import Pipeline


class Outcome(str, enum.Enum):
    OK = "ok"
    MALFORMED = "malformed"
    TOO_LARGE = "too_large"
    BUSY = "busy"
    UNAUTHORIZED = "unauthorized"
    DRAINING = "draining"


class Intake:
    def __init__(
        self,
        pipeline: Pipeline,
        meter: metrics.Meter,
        *,
        token: str | None,
        max_request_bytes: int,
        on_error: Callable[[str, BaseException], None] | None = None,
    ) -> None:
        self.pipeline = pipeline
        self.on_error = on_error
        self.max_request_bytes = max_request_bytes
        self._token = ("Bearer " + token).encode() if token else None
        self.draining = False
        self._requests = meter.create_counter(
            "loopguard.serve.requests",
            unit="{request}",
            description="OTLP export requests received, by transport and outcome",
        )
        self._spans = meter.create_counter(
            "loopguard.serve.spans",
            unit="{span}",
            description="Spans received: accepted (to be judged), refused (busy or "
            "draining: the sender retries) or rejected (unusable trace or span id)",
        )
        for outcome in ("accepted", "refused", "rejected"):
            self._spans.add(0, {"outcome": outcome})
        meter.create_observable_gauge(
            "loopguard.serve.pending_spans",
            callbacks=[lambda _options: [metrics.Observation(pipeline.pending)]],
            unit="{span}",
            description="Spans accepted and not judged yet",
        )

    def authorized(self, header: str | None) -> bool:
        """The ``authorization`` header carries the configured bearer token (or none is set)."""
        if self._token is None:
            return True
        return header is not None and hmac.compare_digest(header.strip().encode(), self._token)

    def body(
        self, transport: str, body: bytes, encoding: str, content_type: str
    ) -> tuple[Outcome, int]:
        """A request body (after the transport checked its declared size): the outcome, and
        how many of its spans were rejected for unusable ids (OTLP's partial success)."""
        try:
            if len(body) > self.max_request_bytes:
                raise TooLarge("body over the limit")
            data = inflate(body, encoding, self.max_request_bytes)
            json_body = "json" in content_type.lower()
            decoded = decode_json(data) if json_body else decode_protobuf(data)
        except TooLarge:
            return self.count(transport, Outcome.TOO_LARGE), 0
        except MalformedRequest:
            return self.count(transport, Outcome.MALFORMED), 0
        except Exception as exc:  # a body no decoder expected: still an answer, and counted
            if self.on_error is not None:
                self.on_error("serve.decode", exc)
            return self.count(transport, Outcome.MALFORMED), 0
        return self.admit(transport, decoded), decoded.rejected

    def admit(self, transport: str, decoded: Decoded) -> Outcome:
        if decoded.rejected:
            self._spans.add(decoded.rejected, {"outcome": "rejected"})
        views = decoded.views
        if self.draining:
            self._spans.add(len(views), {"outcome": "refused"})
            return self.count(transport, Outcome.DRAINING)
        if not self.pipeline.offer(views):
            self._spans.add(len(views), {"outcome": "refused"})
            return self.count(transport, Outcome.BUSY)
        self._spans.add(len(views), {"outcome": "accepted"})
        return self.count(transport, Outcome.OK)

    def count(self, transport: str, outcome: Outcome) -> Outcome:
        self._requests.add(1, {"transport": transport, "outcome": outcome.value})
        return outcome
