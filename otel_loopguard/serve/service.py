"""The running service: parts started in order, health, and the drain on SIGTERM.

Start: exporters, the engine thread, then the receivers (nothing is accepted before it
can be judged). Stop (SIGTERM, SIGINT): health turns to 503 and new requests are refused
as "draining" (503 / ``UNAVAILABLE``: a sender's exporter retries, a load balancer moves
on), the receivers finish the requests in flight, the engine judges every span accepted
before that, then decision spans and metrics are flushed, and only then the process exits.
"""

from __future__ import annotations

import logging
import ssl
import threading
import time
from typing import Any

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.serve import exporters
from otel_loopguard.serve.intake import Intake
from otel_loopguard.serve.output import DecisionOutput, decision_tracer
from otel_loopguard.serve.pipeline import Pipeline
from otel_loopguard.serve.settings import ServeSettings, split_endpoint
from otel_loopguard.serve.state_sync import RunStateSync
from otel_loopguard.telemetry import SCOPE_NAME, Telemetry

logger = logging.getLogger("otel_loopguard.serve")


class Service:
    def __init__(self, config: LoopGuardConfig, settings: ServeSettings) -> None:
        self.config = config
        self.settings = settings
        res = exporters.resource()
        self.tracer_provider = exporters.tracer_provider(res)
        self.meter_provider, self._prometheus = exporters.meter_provider(res, settings)
        self.pipeline: Pipeline | None = None
        self.telemetry = Telemetry(
            config,
            meter_provider=self.meter_provider,
            active_runs=lambda: self.pipeline.replayer.live_runs if self.pipeline else 0,
        )
        self.store = self._open_store()
        self.state_sync: RunStateSync | None = None
        if self.store is not None:
            self.state_sync = RunStateSync(
                self.store, lambda: self._replayer().monitor, self.telemetry.internal_error
            )
        self.output = DecisionOutput(
            self.telemetry, decision_tracer(self.tracer_provider), self.store, self.state_sync
        )
        meter = self.meter_provider.get_meter(SCOPE_NAME + ".serve")
        self._duration = meter.create_histogram(
            "loopguard.serve.processing.duration",
            unit="s",
            description="Time the engine spent judging one accepted request's spans",
        )
        self.pipeline = Pipeline(
            config,
            self.output.decided,
            self.output.run_ended,
            max_pending=settings.max_pending_spans,
            on_error=self.telemetry.internal_error,
            on_batch=lambda seconds, _spans: self._duration.record(seconds),
            on_run_start=self.state_sync.run_started if self.state_sync else None,
            on_turn_end=self.state_sync.save if self.state_sync else None,
        )
        self.intake = Intake(
            self.pipeline,
            meter,
            token=settings.token,
            max_request_bytes=settings.max_request_bytes,
            on_error=self.telemetry.internal_error,
        )
        self.grpc: Any = None
        self.http: Any = None
        self.ports: dict[str, int] = {}
        self.stopped = threading.Event()

    def start(self) -> None:
        settings = self.settings
        assert self.pipeline is not None
        self.pipeline.start()
        if settings.grpc_endpoint:
            from otel_loopguard.serve.grpc_receiver import GRPCReceiver

            self.grpc = GRPCReceiver(self.intake, settings.grpc_endpoint, self._grpc_credentials())
            self.ports["grpc"] = self.grpc.start()
        if settings.http_endpoint:
            from otel_loopguard.serve.http_receiver import HTTPReceiver

            host, port = split_endpoint(settings.http_endpoint)
            self.http = HTTPReceiver(self.intake, host, port, self.health, self._ssl_context())
            self.ports["http"] = self.http.start()
        if self._prometheus is not None:
            self.ports["prometheus"] = int(self._prometheus[0].server_address[1])

    def _replayer(self) -> Any:
        assert self.pipeline is not None
        return self.pipeline.replayer

    def health(self) -> tuple[bool, dict[str, Any]]:
        pipeline = self.pipeline
        assert pipeline is not None
        serving = not self.intake.draining
        return serving, {
            "status": "serving" if serving else "draining",
            "pending_spans": pipeline.pending,
            "judged_spans": pipeline.judged,
            "live_runs": pipeline.replayer.live_runs,
        }

    def stop(self) -> bool:
        """Drain and stop (module docstring); False when the drain ran out of time."""
        started = time.monotonic()
        self.intake.draining = True
        if self.grpc is not None:
            self.grpc.stop(grace=min(10.0, self.settings.drain_seconds))
        if self.http is not None:
            self.http.stop()
        assert self.pipeline is not None
        left = max(self.settings.drain_seconds - (time.monotonic() - started), 1.0)
        drained = self.pipeline.drain(left)
        if not drained:
            logger.warning(
                "otel-loopguard serve: %d spans not judged within %.0f s of the drain",
                self.pipeline.pending,
                self.settings.drain_seconds,
            )
        for flush in (self.tracer_provider.shutdown, self.meter_provider.shutdown):
            try:
                flush()
            except Exception as exc:
                logger.warning("otel-loopguard serve: flush failed: %s", type(exc).__name__)
        if self._prometheus is not None:
            self._prometheus[0].shutdown()
        if self.store is not None:
            self.store.close()
        self.stopped.set()
        return drained

    def _open_store(self) -> Any:
        """The shared run store, or None: a memory store in the service would hold STOPs
        nobody else reads."""
        if (self.config.store or "memory").strip().lower() == "memory":
            return None
        from otel_loopguard.engine.store import open_store

        telemetry = self.telemetry
        return open_store(
            self.config,
            on_error=lambda kind, exc: telemetry.internal_error(f"store.{kind}", exc),
        )

    def _grpc_credentials(self) -> Any:
        settings = self.settings
        if not (settings.tls_cert and settings.tls_key):
            return None
        import grpc

        with open(settings.tls_key, "rb") as key, open(settings.tls_cert, "rb") as cert:
            return grpc.ssl_server_credentials([(key.read(), cert.read())])

    def _ssl_context(self) -> ssl.SSLContext | None:
        settings = self.settings
        if not (settings.tls_cert and settings.tls_key):
            return None
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(settings.tls_cert, settings.tls_key)
        return context
