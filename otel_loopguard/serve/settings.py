"""What ``otel-loopguard serve`` is told by its flags: endpoints, TLS, token, limits.

Detection itself is configured as everywhere, by the ``OTEL_LOOPGUARD_*`` variables
(:class:`~otel_loopguard.engine.config.LoopGuardConfig`); these are the service's own
settings. Defaults are safe to run as they are: loopback only, 4 MiB requests (the
Collector's and the SDKs' own default batch fits well inside), bounded pending spans.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_GRPC = "127.0.0.1:4317"
DEFAULT_HTTP = "127.0.0.1:4318"
DEFAULT_PROMETHEUS = "127.0.0.1:9464"
#: largest request accepted, compressed or inflated (the OTLP exporters' batches are ~1 MB)
DEFAULT_MAX_REQUEST_BYTES = 4 * 1024 * 1024
#: spans accepted and not judged yet; past it, senders are told to retry later
DEFAULT_MAX_PENDING_SPANS = 50_000
#: seconds a sender refused for capacity is told to wait (Retry-After / gRPC RetryInfo)
RETRY_AFTER_SECONDS = 1


@dataclass(frozen=True)
class ServeSettings:
    grpc_endpoint: str | None = DEFAULT_GRPC  # None: no gRPC receiver
    http_endpoint: str | None = DEFAULT_HTTP  # None: no HTTP receiver
    prometheus_endpoint: str | None = DEFAULT_PROMETHEUS  # None: no Prometheus endpoint
    tls_cert: str | None = None
    tls_key: str | None = None
    token: str | None = None  # the bearer token every request must carry, when set
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    max_pending_spans: int = DEFAULT_MAX_PENDING_SPANS
    drain_seconds: float = 30.0  # at most this long to judge what was accepted on SIGTERM


def split_endpoint(endpoint: str) -> tuple[str, int]:
    """``host:port`` (``[::1]:4317`` for IPv6) into its parts; ValueError when it is not."""
    host, sep, port = endpoint.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{endpoint!r} is not host:port")
    return host.strip("[]"), int(port)
