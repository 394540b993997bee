"""``otel-loopguard serve`` as the tests run it: a real process on loopback ports chosen by
the system, its decision spans and metrics exported over OTLP/HTTP to a receiver in the
test, and the helpers to read what it shows (Prometheus text, health)."""

from __future__ import annotations

import json
import os
import re
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

AGENT = Path(__file__).with_name("agent.py")
#: the console script: the installed package (the compiled wheel in the compiled suite)
SCRIPT = Path(sys.executable).with_name("otel-loopguard")
_LISTENING = re.compile(r"listening \((.*)\)")


class ServeProcess:
    def __init__(
        self,
        receiver_endpoint: str,
        *flags: str,
        env: dict[str, str] | None = None,
        ca: str | None = None,
    ):
        #: the CA file of the service's certificate when it serves TLS
        self.ca = ca
        self._context = ssl.create_default_context(cafile=ca) if ca else None
        self.scheme = "https" if ca else "http"
        environment = {
            **os.environ,
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver_endpoint,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_METRIC_EXPORT_INTERVAL": "500",
            "OTEL_SERVICE_NAME": "loopguard-serve-under-test",
            **(env or {}),
        }
        self.process = subprocess.Popen(
            [
                str(SCRIPT),
                "serve",
                "--grpc-endpoint",
                "127.0.0.1:0",
                "--http-endpoint",
                "127.0.0.1:0",
                "--prometheus-endpoint",
                "127.0.0.1:0",
                *flags,
            ],
            stderr=subprocess.PIPE,
            text=True,
            env=environment,
        )
        self.ports: dict[str, int] = {}
        self.stderr_lines: list[str] = []
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr_lines.append(line)
            found = _LISTENING.search(line)
            if found:
                for part in found.group(1).split(", "):
                    name, _, port = part.partition(" port ")
                    self.ports[name] = int(port)
                break
        else:
            raise RuntimeError("serve did not start: " + "".join(self.stderr_lines))
        # keep reading its log: a full pipe would block the service
        self._reader = threading.Thread(target=self._read_log, daemon=True)
        self._reader.start()

    def _read_log(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr_lines.append(line)

    @property
    def grpc(self) -> str:
        return f"127.0.0.1:{self.ports['grpc']}"

    @property
    def http(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.ports['http']}"

    def stop(self, timeout: float = 60) -> int:
        if self.process.poll() is None:
            self.process.terminate()
        code = self.process.wait(timeout)
        self._reader.join(10)
        return code

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    # -- what it shows -----------------------------------------------------------------------

    def prometheus(self) -> list[tuple[str, dict[str, str], float]]:
        url = f"{self.scheme}://127.0.0.1:{self.ports['prometheus']}/metrics"
        with urllib.request.urlopen(url, timeout=10, context=self._context) as answer:
            text = answer.read().decode()
        return [
            (sample.name, sample.labels, sample.value)
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        ]

    def metric(self, name: str, **labels: str) -> float:
        return sum(
            value
            for sample, sample_labels, value in self.prometheus()
            if sample == name and all(sample_labels.get(k) == v for k, v in labels.items())
        )

    def health(self) -> tuple[int, dict[str, Any]]:
        try:
            url = f"{self.http}/health"
            with urllib.request.urlopen(url, timeout=10, context=self._context) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    def idle(self, timeout: float = 20) -> None:
        """Wait until every accepted span has been judged."""
        wait_for(lambda: self.health()[1]["pending_spans"] == 0, timeout)


def run_agent(
    protocol: str,
    endpoint: str,
    run: str,
    service: str,
    *extra: str,
    env: dict[str, str] | None = None,
) -> str:
    """Run the agent process to its end (``env``: more of its variables); its trace id."""
    # requests lets REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE (set on some machines) override the
    # CA file the HTTP exporter passes it; the agent is to trust the test's CA only
    agent_env = {
        k: v for k, v in os.environ.items() if k not in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")
    }
    agent_env.update(env or {})
    done = subprocess.run(
        [
            sys.executable,
            str(AGENT),
            "--protocol",
            protocol,
            "--endpoint",
            endpoint,
            "--run",
            run,
            "--service",
            service,
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env=agent_env,
    )
    return done.stdout.strip().splitlines()[-1]


def wait_for(condition: Callable[[], Any], timeout: float = 20, what: str = "condition") -> Any:
    """Poll ``condition`` until it returns something true; fail naming ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not met in {timeout:.0f}s")
        time.sleep(0.1)
