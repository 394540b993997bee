"""The service's own meter and tracer providers, set up from the standard OTel variables.

Metrics leave by a Prometheus endpoint (``--prometheus-endpoint``) and/or OTLP when
``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`` is set; decision
spans leave by OTLP when ``OTEL_EXPORTER_OTLP_ENDPOINT`` or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set (``OTEL_*_EXPORTER=none`` turns one off). The
protocol follows ``OTEL_EXPORTER_OTLP[_TRACES|_METRICS]_PROTOCOL``: ``http/protobuf`` (the
specification's default) or ``grpc``. The exporters read the rest of their variables
(headers, certificates, timeouts) themselves. The resource is the SDK's
(``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES``, else ``otel-loopguard-serve``).
"""

from __future__ import annotations

import os
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from otel_loopguard.serve.settings import ServeSettings, split_endpoint

SERVICE_NAME = "otel-loopguard-serve"


def _wanted(signal: str) -> bool:
    """OTLP export of ``signal`` (``TRACES`` / ``METRICS``) is on: an endpoint is set and
    the signal's exporter variable does not say ``none``."""
    exporter = os.environ.get(f"OTEL_{signal}_EXPORTER", "otlp").strip().lower()
    if exporter == "none":
        return False
    return bool(
        os.environ.get(f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")
        or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    )


def _protocol(signal: str) -> str:
    value = os.environ.get(f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL") or os.environ.get(
        "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"
    )
    return "grpc" if value.strip().lower() == "grpc" else "http/protobuf"


def resource() -> Resource:
    detected = Resource.create()
    if str(detected.attributes.get("service.name", "")).startswith("unknown_service"):
        detected = detected.merge(Resource.create({"service.name": SERVICE_NAME}))
    return detected


def tracer_provider(res: Resource) -> TracerProvider:
    """Decision spans' provider: OTLP when configured, else a provider that drops them."""
    provider = TracerProvider(resource=res)
    if _wanted("TRACES"):
        exporter: Any
        if _protocol("TRACES") == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter()
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
                OTLPSpanExporter as HTTPSpanExporter,
            )

            exporter = HTTPSpanExporter()
        # a short schedule: a decision span is news for whoever watches the trace
        provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=500))
    return provider


def meter_provider(res: Resource, settings: ServeSettings) -> tuple[MeterProvider, Any]:
    """The meter provider and the Prometheus HTTP server (None when there is none)."""
    readers: list[MetricReader] = []
    server = None
    if settings.prometheus_endpoint:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
        from prometheus_client import start_http_server

        host, port = split_endpoint(settings.prometheus_endpoint)
        readers.append(PrometheusMetricReader())
        tls: dict[str, Any] = {}
        if settings.tls_cert and settings.tls_key:
            tls = {"certfile": settings.tls_cert, "keyfile": settings.tls_key}
        server = start_http_server(port, addr=host, **tls)
    if _wanted("METRICS"):
        exporter: Any
        if _protocol("METRICS") == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
                OTLPMetricExporter,
            )

            exporter = OTLPMetricExporter()
        else:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
                OTLPMetricExporter as HTTPMetricExporter,
            )

            exporter = HTTPMetricExporter()
        interval = float(os.environ.get("OTEL_METRIC_EXPORT_INTERVAL", "10000") or 10000)
        readers.append(
            PeriodicExportingMetricReader(exporter, export_interval_millis=max(interval, 100.0))
        )
    return MeterProvider(metric_readers=readers, resource=res), server
