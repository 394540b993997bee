"""A real ``redis-server`` for the tests of the shared run store (and the ``serve`` service).

The store's behaviour that matters (one round trip per gate call, a server killed or
paused mid-run, a foreign value under a key) can only be shown against the real server, so
the tests start Debian's ``redis-server`` on a free loopback port in a temporary
directory, with persistence off, and stop it at teardown. ``kill``, ``pause`` (SIGSTOP),
``resume`` (SIGCONT) and ``restart`` (same port, empty data) let a test break it on
purpose. Without ``redis-server`` on PATH the fixture skips with the install line.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

INSTALL_HINT = "redis-server not found (Debian: apt-get install redis-server)"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """One ``redis-server`` process on ``127.0.0.1:<port>``; :attr:`url` for the store."""

    def __init__(
        self,
        directory: Path,
        port: int | None = None,
        *,
        password: str | None = None,
        unix_socket: bool = False,
    ) -> None:
        self.directory = directory
        self.port = port if port is not None else _free_port()
        #: ``requirepass``: clients must ``AUTH`` (the URL's password)
        self.password = password
        #: also listen on a unix socket in ``directory`` (:attr:`unix_url`)
        self.socket_path = directory / "redis.sock" if unix_socket else None
        self.process: subprocess.Popen[bytes] | None = None
        self._paused = False

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    @property
    def unix_url(self) -> str:
        if self.socket_path is None:
            raise RuntimeError("started without unix_socket=True")
        auth = f":{self.password}@" if self.password else ""
        return f"unix://{auth}{self.socket_path}?db=0"

    def _auth(self) -> bytes:
        if not self.password:
            return b""
        secret = self.password.encode()
        return b"*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n" % (len(secret), secret)

    def start(self, timeout: float = 10.0) -> None:
        """Start the server and wait until it answers PING."""
        executable = shutil.which("redis-server")
        if executable is None:
            raise RuntimeError(INSTALL_HINT)
        self.process = subprocess.Popen(
            [
                executable,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.directory),
                "--daemonize",
                "no",
                "--loglevel",
                "warning",
                *(["--requirepass", self.password] if self.password else []),
                *(
                    ["--unixsocket", str(self.socket_path), "--unixsocketperm", "700"]
                    if self.socket_path is not None
                    else []
                ),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self._paused = False
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                stderr = self.process.stderr.read().decode() if self.process.stderr else ""
                raise RuntimeError(f"redis-server exited at start: {stderr[-500:]}")
            if self.ping():
                return
            time.sleep(0.02)
        raise RuntimeError(f"redis-server did not answer on port {self.port}")

    def ping(self, timeout: float = 0.5) -> bool:
        """Whether the server answers ``PING`` (a raw RESP exchange, no client library)."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as sock:
                sock.sendall(self._auth() + b"*1\r\n$4\r\nPING\r\n")
                reply = b""
                while b"\r\n" not in reply or (self.password and reply.count(b"\r\n") < 2):
                    chunk = sock.recv(64)
                    if not chunk:
                        break
                    reply += chunk
                return b"+PONG" in reply
        except OSError:
            return False

    def command(self, *parts: str, timeout: float = 2.0) -> bytes:
        """Send one command (RESP) and return the raw reply: for tests that plant a value
        without going through the store under test."""
        message = f"*{len(parts)}\r\n".encode()
        for part in parts:
            data = part.encode()
            message += b"$" + str(len(data)).encode() + b"\r\n" + data + b"\r\n"
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as sock:
            auth = self._auth()
            sock.sendall(auth + message)
            time.sleep(0.05)
            reply = sock.recv(1 << 16)
            return reply[len(b"+OK\r\n") :] if auth and reply.startswith(b"+OK\r\n") else reply

    def info(self, field: str) -> int:
        """A number from ``INFO`` (``connected_clients``, ``total_connections_received``);
        the connection asking is counted in both."""
        reply = self.command("INFO").decode()
        return int(reply.split(f"{field}:", 1)[1].split()[0])

    def kill(self) -> None:
        """SIGKILL the server (a crash: connections drop, data is gone)."""
        if self.process is None:
            return
        if self._paused:
            self.resume()
        self.process.kill()
        self.process.wait(timeout=10)
        self.process = None

    def pause(self) -> None:
        """SIGSTOP: the port stays open and accepts connections, nothing answers."""
        if self.process is not None and not self._paused:
            os.kill(self.process.pid, signal.SIGSTOP)
            self._paused = True

    def resume(self) -> None:
        """SIGCONT after :meth:`pause`."""
        if self.process is not None and self._paused:
            os.kill(self.process.pid, signal.SIGCONT)
            self._paused = False

    def restart(self) -> None:
        """Kill and start again on the same port (empty data)."""
        self.kill()
        self.start()

    def stop(self) -> None:
        """Stop at teardown (also when paused)."""
        if self.process is None:
            return
        with contextlib.suppress(Exception):
            self.resume()
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)
        self.process = None


@contextlib.contextmanager
def running_redis_server() -> Iterator[RedisServer]:
    """A started :class:`RedisServer` in a temporary directory, stopped on exit."""
    with tempfile.TemporaryDirectory(prefix="loopguard-redis-") as directory:
        server = RedisServer(Path(directory))
        server.start()
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    """A fresh real ``redis-server`` per test (skipped, with the install line, without one)."""
    if shutil.which("redis-server") is None:
        pytest.skip(INSTALL_HINT)
    with running_redis_server() as server:
        yield server


__all__ = ["INSTALL_HINT", "RedisServer", "redis_server", "running_redis_server"]
