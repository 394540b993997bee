"""OTLP/gRPC receiver (grpcio): ``TraceService/Export``.

The method is registered with no deserializer, so the body reaches :class:`Intake` as
bytes: a body that is not an ``ExportTraceServiceRequest`` is answered
``INVALID_ARGUMENT`` and counted (the runtime's own failed parse would be ``INTERNAL`` and
uncounted). The runtime enforces the size limit (``grpc.max_receive_message_length``:
``RESOURCE_EXHAUSTED``) and inflates gzip. Refused for capacity: ``RESOURCE_EXHAUSTED`` with
a ``google.rpc.RetryInfo`` delay, which the OTLP exporters honour; while draining:
``UNAVAILABLE``.
"""

from __future__ import annotations

from concurrent import futures
from typing import Any

import grpc

from otel_loopguard.serve.decode import success_response
from otel_loopguard.serve.intake import Intake, Outcome
from otel_loopguard.serve.settings import RETRY_AFTER_SECONDS

_SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
_CODES = {
    Outcome.MALFORMED: grpc.StatusCode.INVALID_ARGUMENT,
    Outcome.UNAUTHORIZED: grpc.StatusCode.UNAUTHENTICATED,
    Outcome.TOO_LARGE: grpc.StatusCode.RESOURCE_EXHAUSTED,
    Outcome.BUSY: grpc.StatusCode.RESOURCE_EXHAUSTED,
    Outcome.DRAINING: grpc.StatusCode.UNAVAILABLE,
}


def _retry_info() -> bytes:
    from google.protobuf.duration_pb2 import Duration
    from google.rpc.error_details_pb2 import RetryInfo

    return RetryInfo(retry_delay=Duration(seconds=RETRY_AFTER_SECONDS)).SerializeToString()


class GRPCReceiver:
    def __init__(
        self,
        intake: Intake,
        address: str,
        credentials: grpc.ServerCredentials | None = None,
        workers: int = 4,
    ) -> None:
        self.intake = intake
        limit = intake.max_request_bytes
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="loopguard-grpc"),
            options=[
                ("grpc.max_receive_message_length", limit),
                ("grpc.max_send_message_length", 1024 * 1024),
            ],
            maximum_concurrent_rpcs=workers * 16,
        )
        handler = grpc.unary_unary_rpc_method_handler(self._export)
        self._server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(_SERVICE, {"Export": handler}),)
        )
        if credentials is not None:
            self.port = self._server.add_secure_port(address, credentials)
        else:
            self.port = self._server.add_insecure_port(address)
        self._retry_info: bytes | None = None

    def start(self) -> int:
        self._server.start()
        return self.port

    def stop(self, grace: float = 10.0) -> None:
        """Refuse new calls, let the ones in flight finish (up to ``grace`` seconds)."""
        self._server.stop(grace).wait(grace + 1)

    def _export(self, body: bytes, context: Any) -> bytes:
        intake = self.intake
        authorization = None
        for key, value in context.invocation_metadata():
            if key == "authorization":
                authorization = value
        rejected = 0
        if not intake.authorized(authorization):
            outcome = intake.count("grpc", Outcome.UNAUTHORIZED)
        else:
            outcome, rejected = intake.body("grpc", body, "", "application/x-protobuf")
        if outcome is Outcome.OK:
            return success_response(rejected, json_body=False)
        if outcome is Outcome.BUSY:
            if self._retry_info is None:
                self._retry_info = _retry_info()
            context.set_trailing_metadata((("google.rpc.retryinfo-bin", self._retry_info),))
        context.abort(_CODES[outcome], outcome.value)
        return b""  # not reached: abort raises
