"""``otel-loopguard serve``: flags into :class:`ServeSettings`, run until SIGTERM/SIGINT.

Bad flags are one line and exit 2; an endpoint that cannot be bound is one line and exit 1.
Once listening, one line on stderr names every endpoint (with the port the system chose
when a flag said port 0), so a supervisor or a test knows where to send.
"""

from __future__ import annotations

import argparse
import ipaddress
import signal
import sys
import threading
from typing import Any

from otel_loopguard.engine.extras import install_hint
from otel_loopguard.serve.settings import (
    DEFAULT_GRPC,
    DEFAULT_HTTP,
    DEFAULT_MAX_PENDING_SPANS,
    DEFAULT_MAX_REQUEST_BYTES,
    DEFAULT_PROMETHEUS,
    ServeSettings,
    split_endpoint,
)


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run the OTLP detection service (agents in any language export spans to it)",
        description=(
            "Receive OTLP spans (gRPC and HTTP), judge them with the same span follower, "
            "detectors and policy as in-process (OTEL_LOOPGUARD_* variables), and export "
            "decisions as metrics and loopguard.decision spans (OTEL_EXPORTER_OTLP_*). "
            "Say 'none' to turn an endpoint off."
        ),
    )
    parser.add_argument("--grpc-endpoint", default=DEFAULT_GRPC, metavar="HOST:PORT")
    parser.add_argument("--http-endpoint", default=DEFAULT_HTTP, metavar="HOST:PORT")
    parser.add_argument("--prometheus-endpoint", default=DEFAULT_PROMETHEUS, metavar="HOST:PORT")
    parser.add_argument("--tls-cert", metavar="PEM", help="certificate (with --tls-key): TLS")
    parser.add_argument("--tls-key", metavar="PEM", help="private key of --tls-cert")
    parser.add_argument(
        "--token-file",
        metavar="PATH",
        help="file holding a bearer token every request must carry (Authorization header)",
    )
    parser.add_argument(
        "--max-request-bytes",
        type=int,
        default=DEFAULT_MAX_REQUEST_BYTES,
        metavar="N",
        help=f"largest request, compressed or inflated (default {DEFAULT_MAX_REQUEST_BYTES})",
    )
    parser.add_argument(
        "--max-pending-spans",
        type=int,
        default=DEFAULT_MAX_PENDING_SPANS,
        metavar="N",
        help="spans accepted and not judged yet before senders are told to retry "
        f"(default {DEFAULT_MAX_PENDING_SPANS})",
    )
    parser.add_argument(
        "--drain-seconds",
        type=float,
        default=30.0,
        metavar="S",
        help="on SIGTERM, at most this long to judge what was accepted (default 30)",
    )
    parser.add_argument(
        "--policy", metavar="POLICY", help="default, strict, observe or package.module:callable"
    )
    parser.set_defaults(handler=run)


class UsageError(Exception):
    pass


def _endpoint(flag: str, value: str | None) -> str | None:
    if value is None or value.strip().lower() in ("", "none", "off"):
        return None
    try:
        split_endpoint(value)
    except ValueError:
        raise UsageError(f"{flag} {value!r}: expected HOST:PORT or none") from None
    return value.strip()


def settings_from(args: argparse.Namespace) -> ServeSettings:
    if bool(args.tls_cert) != bool(args.tls_key):
        raise UsageError("--tls-cert and --tls-key go together")
    token = None
    if args.token_file:
        try:
            with open(args.token_file, encoding="utf-8") as handle:
                token = handle.read().strip()
        except OSError as exc:
            raise UsageError(f"--token-file: {exc.strerror or exc}") from None
        if not token:
            raise UsageError("--token-file: the file is empty")
    if args.max_request_bytes < 1024:
        raise UsageError("--max-request-bytes: at least 1024")
    if args.max_pending_spans < 1:
        raise UsageError("--max-pending-spans: at least 1")
    return ServeSettings(
        grpc_endpoint=_endpoint("--grpc-endpoint", args.grpc_endpoint),
        http_endpoint=_endpoint("--http-endpoint", args.http_endpoint),
        prometheus_endpoint=_endpoint("--prometheus-endpoint", args.prometheus_endpoint),
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        token=token,
        max_request_bytes=args.max_request_bytes,
        max_pending_spans=args.max_pending_spans,
        drain_seconds=max(args.drain_seconds, 0.0),
    )


def _exposed(settings: ServeSettings) -> list[str]:
    """Endpoints not on a loopback address."""
    exposed = []
    for endpoint in (settings.grpc_endpoint, settings.http_endpoint, settings.prometheus_endpoint):
        if endpoint is None:
            continue
        host = split_endpoint(endpoint)[0]
        try:
            loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            exposed.append(endpoint)
    return exposed


def run(args: argparse.Namespace) -> int:
    from otel_loopguard.analyze.command import UsageError as PolicyError
    from otel_loopguard.analyze.command import _check_policy, _collecting_cycles_less_often

    try:
        settings = settings_from(args)
        if not (settings.grpc_endpoint or settings.http_endpoint):
            raise UsageError("no receiver: --grpc-endpoint and --http-endpoint are both none")
        if args.policy:
            _check_policy(args.policy)
    except (UsageError, PolicyError) as exc:
        print(f"otel-loopguard serve: {exc}", file=sys.stderr)
        return 2
    from otel_loopguard.engine.config import LoopGuardConfig

    config = LoopGuardConfig.from_env(**({"policy": args.policy} if args.policy else {}))
    exposed = _exposed(settings)
    if exposed and not (settings.token and settings.tls_cert):
        print(
            f"otel-loopguard serve: warning: {', '.join(exposed)} not on loopback "
            "without both --tls-cert and --token-file",
            file=sys.stderr,
        )
    with _collecting_cycles_less_often():  # as analyze: the engine allocates as a replay does
        return _serve(config, settings)


def _serve(config: Any, settings: ServeSettings) -> int:
    from otel_loopguard.serve.service import Service

    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    try:
        service = Service(config, settings)
        service.start()
    except ModuleNotFoundError as exc:
        print(
            f"otel-loopguard serve: {exc.name} is missing: {install_hint('serve')}",
            file=sys.stderr,
        )
        return 2
    except (OSError, RuntimeError) as exc:  # a port in use, a TLS file that is not one
        print(f"otel-loopguard serve: cannot start: {exc}", file=sys.stderr)
        return 1
    listening = ", ".join(f"{name} port {port}" for name, port in service.ports.items())
    print(f"otel-loopguard serve: listening ({listening})", file=sys.stderr, flush=True)
    while not stop.wait(3600):
        pass
    drained = service.stop()
    print("otel-loopguard serve: stopped", file=sys.stderr, flush=True)
    return 0 if drained else 1
