"""The store URL as users write it: a password in it (``requirepass`` servers), a wrong one
failing open like an outage, and a unix socket (``unix://``) instead of TCP."""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from otel_loopguard_testing.redis_server import INSTALL_HINT, RedisServer

from otel_loopguard.engine.store import CounterDelta, StopRecord
from otel_loopguard.engine.store.redis import RedisStore

SECRET = "s3cret-pw"


@pytest.fixture
def guarded_server() -> Iterator[RedisServer]:
    """A real redis-server with a password, on TCP and on a unix socket."""
    if shutil.which("redis-server") is None:
        pytest.skip(INSTALL_HINT)
    # a short directory: a unix socket path must stay under about 100 bytes
    with tempfile.TemporaryDirectory(prefix="lg-", dir="/tmp") as directory:
        server = RedisServer(Path(directory), password=SECRET, unix_socket=True)
        server.start()
        try:
            yield server
        finally:
            server.stop()


def test_a_password_in_the_url_is_used_and_a_stop_is_shared(guarded_server: RedisServer) -> None:
    replica_a = RedisStore(guarded_server.url, timeout_ms=1000)
    replica_b = RedisStore(guarded_server.url, timeout_ms=1000)
    assert replica_a.gate("run-1", CounterDelta(tool_calls=2), 1.0) is not None
    assert replica_a.write_stop("run-1", StopRecord(("no_progress",), "same answer", 2.0))
    answer = replica_b.gate("run-1", CounterDelta(tool_calls=1), 3.0)
    assert answer is not None and answer.stop is not None
    assert answer.stop.detectors == ("no_progress",)
    replica_a.close()
    replica_b.close()


def test_a_wrong_password_fails_open_with_one_warning_that_hides_it(
    guarded_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    errors: list[str] = []
    url = guarded_server.url.replace(SECRET, "wrong-pw")
    store = RedisStore(url, timeout_ms=500, on_error=lambda kind, exc: errors.append(kind))
    with caplog.at_level(logging.WARNING, logger="otel_loopguard.store"):
        for _ in range(5):
            assert store.gate("run-1", CounterDelta(steps=1), 1.0) is None
            assert store.read_stop("run-1") is None
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1
    assert "wrong-pw" not in warnings[0] and "***" in warnings[0]
    assert errors and set(errors) == {"unavailable"}
    store.close()


def test_a_unix_socket_url_shares_the_run(guarded_server: RedisServer) -> None:
    over_tcp = RedisStore(guarded_server.url, timeout_ms=1000)
    over_socket = RedisStore(guarded_server.unix_url, timeout_ms=1000)
    assert over_socket.gate("run-1", CounterDelta(tool_calls=1, input_tokens=100), 1.0)
    answer = over_tcp.gate("run-1", CounterDelta(tool_calls=1, input_tokens=50), 2.0)
    assert answer is not None and answer.totals is not None
    assert (answer.totals.tool_calls, answer.totals.input_tokens) == (2, 150)
    assert over_socket.save_state("run-1", {"windows": [3]}, 0) == 1
    loaded = over_tcp.load_state("run-1")
    assert loaded is not None and loaded.data == {"windows": [3]}
    over_tcp.close()
    over_socket.close()
