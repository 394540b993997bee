"""Jaeger and the Collector as the tests run them: the built binaries on free loopback
ports, everything else as shipped (Jaeger with its all-in-one defaults, the Collector with a
configuration from ``collector/`` that configs.py gave the test's addresses)."""

from __future__ import annotations

import json
import os
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .configs import collector_telemetry, rewritten
from .processes import Background, free_port

#: Jaeger's all-in-one listeners (its embedded configuration's keys), each given a free port
JAEGER_LISTENERS = (
    "receivers.otlp.protocols.grpc.endpoint",
    "receivers.otlp.protocols.http.endpoint",
    "receivers.jaeger.protocols.grpc.endpoint",
    "receivers.jaeger.protocols.thrift_http.endpoint",
    "receivers.jaeger.protocols.thrift_binary.endpoint",
    "receivers.jaeger.protocols.thrift_compact.endpoint",
    "receivers.zipkin.endpoint",
    "extensions.remote_sampling.http.endpoint",
    "extensions.remote_sampling.grpc.endpoint",
    "extensions.healthcheckv2.http.endpoint",
    "extensions.expvar.endpoint",
    "extensions.zpages.endpoint",
    "extensions.jaeger_query.http.endpoint",
    "extensions.jaeger_query.grpc.endpoint",
)


@dataclass
class Jaeger:
    process: Background
    otlp_grpc: str  # host:port
    otlp_http: str  # http://host:port
    query: str  # http://host:port

    def traces(self, service: str, tags: dict[str, str]) -> list[dict[str, Any]]:
        """Jaeger's HTTP query API, as its UI's search form uses it."""
        params = urllib.parse.urlencode(
            {"service": service, "tags": json.dumps(tags), "lookback": "1h", "limit": 100}
        )
        with urllib.request.urlopen(f"{self.query}/api/traces?{params}", timeout=10) as answer:
            return json.load(answer)["data"] or []


def start_jaeger(binary: Path, directory: Path) -> Jaeger:
    """Jaeger v2 all-in-one (in-memory storage), every listener on a free loopback port and
    its own metrics off (they would take port 8888)."""
    ports = {key: free_port() for key in JAEGER_LISTENERS}
    sets = [f"--set={key}=127.0.0.1:{port}" for key, port in ports.items()]
    sets.append("--set=service.telemetry.metrics.level=none")
    # Jaeger traces its own queries to OTEL_EXPORTER_OTLP_ENDPOINT, by default its own OTLP
    # receiver's port 4317: its own, moved, receiver here too
    own = f"http://127.0.0.1:{ports['receivers.otlp.protocols.grpc.endpoint']}"
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": own}
    query = f"http://127.0.0.1:{ports['extensions.jaeger_query.http.endpoint']}"
    process = _started([str(binary), *sets], directory / "jaeger.log", f"{query}/api/services", env)
    grpc = f"127.0.0.1:{ports['receivers.otlp.protocols.grpc.endpoint']}"
    http = f"http://127.0.0.1:{ports['receivers.otlp.protocols.http.endpoint']}"
    return Jaeger(process, grpc, http, query)


def start_collector(binary: Path, config: Path, ready: str, directory: Path) -> Background:
    """The built Collector on ``config``; ``ready``: a URL that answers once it runs."""
    log = directory / f"collector-{config.stem}.log"
    return _started([str(binary), f"--config={config}"], log, ready)


@dataclass
class ReplicaCollector:
    process: Background
    grpc: str  # host:port of its OTLP/gRPC receiver
    http: str  # http://host:port of its OTLP/HTTP receiver


def start_replica_collector(
    binary: Path, replicas: list[str], backend: str, directory: Path
) -> ReplicaCollector:
    """The Collector running ``collector/serve-replicas.yaml`` in front of ``replicas``
    (their OTLP/gRPC host:port), sending every span on to ``backend`` (host:port)."""
    grpc, http, telemetry = free_port(), free_port(), free_port()
    config = rewritten(
        "serve-replicas.yaml",
        {
            ("receivers", "otlp", "protocols", "grpc", "endpoint"): f"127.0.0.1:{grpc}",
            ("receivers", "otlp", "protocols", "http", "endpoint"): f"127.0.0.1:{http}",
            ("exporters", "load_balancing", "resolver", "static", "hostnames"): replicas,
            ("exporters", "otlp/backend", "endpoint"): backend,
            ("service", "telemetry"): collector_telemetry(telemetry),
        },
        directory,
    )
    process = start_collector(binary, config, f"http://127.0.0.1:{telemetry}/metrics", directory)
    return ReplicaCollector(process, f"127.0.0.1:{grpc}", f"http://127.0.0.1:{http}")


def _started(
    command: list[str], log: Path, ready: str, env: dict[str, str] | None = None
) -> Background:
    """``command`` started, once ``ready`` answers (stopped again if it never does)."""
    process = Background(command, log, env=env)
    try:
        process.wait_ready(ready, timeout=60)
    except BaseException:
        process.stop()
        raise
    return process


def start_prometheus(config: Path, directory: Path) -> tuple[Background, str]:
    """Debian's Prometheus on ``config`` (the shipped collector/prometheus.yml given the
    test's addresses); its base URL once it is ready."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = _started(
        [
            "prometheus",
            f"--config.file={config}",
            f"--storage.tsdb.path={directory / 'prometheus-data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--enable-feature=exemplar-storage",
        ],
        directory / "prometheus.log",
        f"{base}/-/ready",
    )
    return process, base
