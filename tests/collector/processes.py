"""Background processes of the Collector tests: started on free loopback ports, waited for
until they answer, and always stopped (terminate, then kill) with their log kept for the
failure message."""

from __future__ import annotations

import socket
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

from serve.service_process import wait_for

__all__ = ["Background", "free_port", "http_ok", "wait_for"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return 200 <= answer.status < 300
    except (OSError, urllib.error.HTTPError):
        return False


class Background:
    """A program run for the length of a test; its stdout and stderr go to ``log``."""

    def __init__(self, command: list[str], log: Path, env: dict[str, str] | None = None):
        self.command = command
        self.log = log
        self._handle = log.open("w")
        self.process = subprocess.Popen(
            command, stdout=self._handle, stderr=subprocess.STDOUT, env=env
        )

    def running(self) -> bool:
        return self.process.poll() is None

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-6000:]

    def wait_ready(self, url: str, timeout: float = 60) -> None:
        """Wait until ``url`` answers 2xx; fail with the log if the process died first."""

        def ready() -> bool:
            if not self.running():
                raise AssertionError(f"{self.command[0]} exited:\n{self.output()}")
            return http_ok(url)

        wait_for(ready, timeout, f"{Path(self.command[0]).name} ready at {url}")

    def stop(self, timeout: float = 20) -> None:
        if self.running():
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self._handle.close()

    def kill(self) -> None:
        if self.running():
            self.process.kill()
            self.process.wait(10)
