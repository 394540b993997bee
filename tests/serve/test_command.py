"""The command line: a bad flag is one line and exit status 2, an endpoint that cannot be
bound one line and exit status 1; nothing starts listening."""

from __future__ import annotations

import socket
import subprocess

import pytest

from .service_process import SCRIPT


def _serve(*flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), "serve", "--prometheus-endpoint", "none", *flags],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--grpc-endpoint", "not-an-endpoint"], "--grpc-endpoint 'not-an-endpoint'"),
        (["--tls-cert", "cert.pem"], "--tls-cert and --tls-key go together"),
        (["--token-file", "/nonexistent/token"], "--token-file"),
        (["--grpc-endpoint", "none", "--http-endpoint", "none"], "no receiver"),
        (["--policy", "no_such_module:policy"], "--policy"),
    ],
)
def test_a_bad_flag_is_one_line_and_exit_2(flags: list[str], says: str) -> None:
    done = _serve(*flags)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("otel-loopguard serve: ")
    assert says in lines[0]


def test_a_port_in_use_is_one_line_and_exit_1() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _serve("--grpc-endpoint", "none", "--http-endpoint", f"127.0.0.1:{port}")
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("otel-loopguard serve: cannot start")
