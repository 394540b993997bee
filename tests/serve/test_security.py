"""TLS and the bearer token, with the real OTLP exporters of an agent process: a request
without the token is refused (and counted), one with it over TLS is judged."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from otel_loopguard_testing import OTLPReceiver

from .service_process import ServeProcess, run_agent, wait_for

TOKEN = "s3cret-token-for-the-test"


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(cert), "-subj", "/CN=localhost",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        check=True, capture_output=True,
    )  # fmt: skip
    token_file = folder / "token"
    token_file.write_text(TOKEN + "\n")
    with OTLPReceiver() as backend:
        service = ServeProcess(
            backend.endpoint,
            "--tls-cert", str(cert), "--tls-key", str(key), "--token-file", str(token_file),
            ca=str(cert),
        )  # fmt: skip
        yield service
        service.stop()


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_the_token_is_required_and_tls_carries_it(protocol: str, serve: ServeProcess) -> None:
    endpoint = serve.grpc if protocol == "grpc" else serve.http
    assert serve.ca is not None
    refused_before = serve.metric(
        "loopguard_serve_requests_total", transport=protocol, outcome="unauthorized"
    )
    run_agent(protocol, endpoint, "loop", f"no-token-{protocol}", "--ca", serve.ca)
    wait_for(
        lambda: (
            serve.metric(
                "loopguard_serve_requests_total", transport=protocol, outcome="unauthorized"
            )
            > refused_before
        )
    )
    service = f"with-token-{protocol}"
    run_agent(protocol, endpoint, "loop", service, "--ca", serve.ca, "--token", TOKEN)
    wait_for(lambda: serve.metric("loopguard_decisions_total", action="stop", service_name=service))
    assert serve.metric("loopguard_decisions_total", service_name=f"no-token-{protocol}") == 0


def test_plaintext_is_not_served(serve: ServeProcess) -> None:
    with grpc.insecure_channel(serve.grpc) as channel:
        export = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export")
        with pytest.raises(grpc.RpcError):
            export(b"", timeout=5, metadata=(("authorization", f"Bearer {TOKEN}"),))
    assert Path(serve.ca or "").is_file()
